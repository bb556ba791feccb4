#!/usr/bin/env python3
"""Fails if -Xcheck:jni reported a JNI warning that is not Arrow Java's own.

Usage: check_jni_warnings.py FILE...  (the Maven log and surefire's *.dumpstream files)

Under -Xcheck:jni the JVM prints "WARNING in native method: ..." followed by the
Java stack of the native call. Surefire stores what the forked JVM wrote to its
native stdout in target/surefire-reports/*.dumpstream, one line per record
("... Stream '<text>'."). A warning is attributed to the first application frame
of its stack: org.apache.arrow.* frames are Arrow Java's C Data library (its
JNI_OnLoad calls FindClass with "Lpkg/Class;" descriptors, which -Xcheck:jni
flags); anything else, including every org.nativepool frame, fails the check.
The "SIG... handler modified!" lines are not warnings of a native method: the Go
runtime installs its handlers with SA_ONSTACK, which is expected.
"""
import re
import sys

STREAM = re.compile(r"Stream '(.*)'\.?$")
JDK = ("java.", "jdk.", "sun.")


def lines(path):
    with open(path, errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            m = STREAM.search(raw)
            yield m.group(1) if m else raw


def warnings(path):
    """Yields (message, first application frame or None) for each warning."""
    current = None
    for line in lines(path):
        if "WARNING in native method" in line or "FATAL ERROR in native method" in line:
            if current:
                yield current
            current = [line.strip(), None]
        elif current and current[1] is None:
            frame = line.strip()
            if frame.startswith("at "):
                name = frame[3:]
                if not name.startswith(JDK):
                    current[1] = name
    if current:
        yield current


def main(paths):
    ours, arrow = [], 0
    for p in paths:
        for msg, frame in warnings(p):
            if frame and frame.startswith("org.apache.arrow."):
                arrow += 1
            else:
                ours.append((p, msg, frame))
    for p, msg, frame in ours:
        print(f"{p}: {msg}\n    at {frame}")
    print(f"checkjni: {len(ours)} JNI warning(s) from our code, {arrow} from Arrow Java's C Data library (ignored)")
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
