#!/usr/bin/env bash
# make test-lost-executor: an executor killed by its container's memory limit, end to end, on a
# real standalone cluster on 127.0.0.1 (a Master and two Workers in their own JVMs, one executor
# each), and what the plugin makes of it: the driver's diagnosis, the event log, the Native Memory
# page in the live UI and in a History Server, loaded by headless Chromium.
#
#   bash spark/cluster-test/lost-executor.sh   (the Makefile builds the plugin jar first: make jar)
#   LINE=spark3.5_2.12 bash spark/cluster-test/lost-executor.sh   (make test-lost-executor SPARK=3.5)
#
# The second Worker's executors run in a cgroup-v1 memory cgroup sized like a Kubernetes executor
# pod (spark.executor.memory + spark.memory.offHeap.size + the default memoryOverhead): the Worker
# launches them through a `java` of its own (its JAVA_HOME is a directory whose bin/java writes its
# PID into the cgroup's cgroup.procs, then execs the JDK's java), so the executor is in the cgroup
# from its first instruction, as in a pod, and its pod guard reads the cgroup's limit. The
# application (LostExecutorJob) runs one stage; the first task on the confined executor takes
# direct buffers (memory no one accounts for) up to three times the cgroup's headroom, and the
# kernel kills that executor (exit code 137). Spark retries its task on the other executor and the
# job completes. While the driver still runs, the live UI's Native Memory page is checked; after
# it, a History Server started on the event log serves the same page.
#
# Checks (each printing PASS or FAIL):
#   job_survived_on_the_other_executor   every partition's RESULT, exit code 0
#   executor_killed_with_exit_code_137   the Worker's record and the cgroup's oom_kill count
#   driver_diagnosis_names_container_and_part   the driver's WARN line on DriverSide: killed by its
#                                        container's memory limit, naming jvm.direct as grown
#   event_log_holds_the_diagnosis        an ExecutorDiagnosisEvent for the killed executor
#   live_page_shows_both_executors       /nativememory/ on the driver's UI, loaded by Chromium: a
#                                        chart (svg) for each executor, the diagnosis text
#   history_page_shows_both_executors    the same in the History Server, and a screenshot
#   short_job_page_charts_every_executor a second application, a job of a few seconds at the
#                                        default sampling rates (a minute in the event log): its
#                                        live page, loaded by Chromium, charts each executor with
#                                        at least two samples
# Then it prints the measured figures of docs/DEPLOYING.md ("What the driver keeps"): the event
# log's ExecutorSampleEvent bytes per executor-hour and the Native Memory timeline's size.
#
# Skips (exit 0, with the reason) without a writable cgroup-v1 memory controller or without
# chromium. LOST_EXECUTOR_PAGE (default nativememory) is the page's path under each UI; anything
# else shows the page checks failing. Everything it starts is stopped by PID on exit, failure
# included, and the cgroup it made is removed. Prints how long it took.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=spark/cluster-test/common.sh
. "$root/spark/cluster-test/common.sh"
cd "$root"
start_s=$(date +%s)
say() { echo "test-lost-executor: $*"; }

# ---- what it needs: a writable cgroup-v1 memory controller, chromium ----
CG_ROOT=/sys/fs/cgroup/memory
if [[ ! -w $CG_ROOT || ! -f $CG_ROOT/cgroup.procs ]] || ! grep -qs ' cgroup .*memory' /proc/self/mountinfo; then
	say "SKIP: no writable cgroup-v1 memory controller at $CG_ROOT (needs root and cgroup v1)"
	exit 0
fi
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $CHROMIUM ]]; then
	say "SKIP: no chromium (apt-get install chromium)"
	exit 0
fi
PAGE=${LOST_EXECUTOR_PAGE:-nativememory}


# LINE is the Spark line whose plugin jar runs (default spark4.1_2.13), as for run.sh: the jar
# spark/target[/<line>]/nativepool-spark-<line>-*.jar, and the Spark and Scala of its stamp.
LINE=${LINE:-spark4.1_2.13}
plugin_jar=$(plugin_jar_of "$LINE")
if [[ -z $plugin_jar ]]; then
	say "no nativepool-spark-$LINE-*.jar under spark/target; run make jar (SPARK=, SCALA=)" >&2
	exit 2
fi
spark_line=$(stamp_of "$plugin_jar" spark.line)
spark_version=$(stamp_of "$plugin_jar" spark.version)
scala_version=$(stamp_of "$plugin_jar" scala.binary.version)
say "$LINE: $plugin_jar on Spark $spark_version, Scala $scala_version"

# ---- SPARK_HOME: the line's Spark, as make test-cluster runs it (common.sh, spark_home) ----
spark_home "$LINE" "$spark_version" "$scala_version"
export SPARK_SCALA_VERSION=$scala_version
export SPARK_LOCAL_IP=127.0.0.1
spark_cp="$SPARK_HOME/jars/*"
jvm_args=("@$root/spark/spark-jvm.args")

RUN=$root/build/lost-executor/$(date +%Y%m%d-%H%M%S)-$$
WORK1=$RUN/work1
WORK2=$RUN/work2
EVENTS=$RUN/events
mkdir -p "$RUN" "$WORK1" "$WORK2" "$EVENTS"
say "run directory $RUN"

# ---- the application jar ----
app_jar=$RUN/nativepool-lost-executor-job.jar
mkdir -p "$RUN/classes"
# -path: a release's jars/ (Spark 4.3's from PyPI) has derby, whose manifest names jars it lacks
"$JAVA_HOME/bin/javac" -Xlint:all,-path -Werror -proc:none --release 17 -d "$RUN/classes" \
	-cp "$spark_cp:$plugin_jar" spark/cluster-test/src/org/nativepool/spark/clustertest/*.java
"$JAVA_HOME/bin/jar" --create --file "$app_jar" -C "$RUN/classes" .

# ---- the pod: a memory cgroup of heap + off-heap + Spark's default memoryOverhead ----
EXEC_MEMORY_MB=512
OFFHEAP_MB=64
OVERHEAD_MB=384 # max(384 MiB, 10% of the heap)
LIMIT=$(((EXEC_MEMORY_MB + OFFHEAP_MB + OVERHEAD_MB) << 20))
CG=$CG_ROOT/nativepool-lost-executor-$$
mkdir "$CG"
echo "$LIMIT" >"$CG/memory.limit_in_bytes"
echo "$LIMIT" >"$CG/memory.memsw.limit_in_bytes" 2>/dev/null || true
echo 0 >"$CG/memory.swappiness" 2>/dev/null || true
say "cgroup $CG: limit $((LIMIT >> 20)) MiB"
# the second Worker's java: joins the cgroup, then is the JDK's java
CONFINED_JDK=$RUN/confined-jdk
mkdir -p "$CONFINED_JDK/bin"
cat >"$CONFINED_JDK/bin/java" <<EOF
#!/bin/sh
echo \$\$ > '$CG/cgroup.procs' && exec '$JAVA' "\$@"
EOF
chmod +x "$CONFINED_JDK/bin/java"

# ---- free ports ----
read -r MASTER_PORT MASTER_UI W1_PORT W1_UI W2_PORT W2_UI DRIVER_UI HS_UI SHORT_UI <<<"$(python3 -c '
import socket
ss = [socket.socket() for _ in range(9)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))
for s in ss: s.close()')"
MASTER_URL=spark://127.0.0.1:$MASTER_PORT

# ---- everything started is stopped by PID, on any exit; the cgroup is removed ----
pids=()
stop_all() {
	local p c
	for p in "${pids[@]}"; do
		for c in $(descendants "$p"); do kill "$c" 2>/dev/null || true; done
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	done
	if [[ -d $CG ]]; then
		# only executors the second Worker started can be in it
		for _ in $(seq 50); do [[ -s $CG/cgroup.procs ]] || break; sleep 0.1; done
		rmdir "$CG" 2>/dev/null || say "could not remove $CG: $(tr '\n' ' ' <"$CG/cgroup.procs")"
	fi
	say "took $(($(date +%s) - start_s)) s"
}
trap stop_all EXIT
trap "exit 130" INT TERM


"$JAVA" "${jvm_args[@]}" -Xmx256m -cp "$spark_cp" org.apache.spark.deploy.master.Master \
	--host 127.0.0.1 --port "$MASTER_PORT" --webui-port "$MASTER_UI" >"$RUN/master.log" 2>&1 &
pids+=($!)
wait_for 120 "$RUN/master.log" "I have been elected leader" "${pids[-1]}"
"$JAVA" "${jvm_args[@]}" -Xmx256m -cp "$spark_cp" org.apache.spark.deploy.worker.Worker \
	--host 127.0.0.1 --port "$W1_PORT" --webui-port "$W1_UI" --cores 1 --memory 2g \
	--work-dir "$WORK1" "$MASTER_URL" >"$RUN/worker1.log" 2>&1 &
pids+=($!)
JAVA_HOME=$CONFINED_JDK "$JAVA" "${jvm_args[@]}" -Xmx256m -cp "$spark_cp" org.apache.spark.deploy.worker.Worker \
	--host 127.0.0.1 --port "$W2_PORT" --webui-port "$W2_UI" --cores 1 --memory 2g \
	--work-dir "$WORK2" "$MASTER_URL" >"$RUN/worker2.log" 2>&1 &
pids+=($!)
wait_for 120 "$RUN/worker1.log" "Successfully registered with master" "${pids[-2]}"
wait_for 120 "$RUN/worker2.log" "Successfully registered with master" "${pids[-1]}"
say "master $MASTER_URL, worker1 (free), worker2 (executors in $CG)"

MAIN_OUT=$RUN/main.out
MAIN_ERR=$RUN/main.err
PARTITIONS=4
t0=$(date +%s)
timeout --kill-after=10 420 "$JAVA" "${jvm_args[@]}" -Xmx512m -cp "$spark_cp" \
	org.apache.spark.deploy.SparkSubmit \
	--master "$MASTER_URL" --deploy-mode client \
	--jars "$plugin_jar" \
	--conf spark.plugins=org.nativepool.spark.NativePoolPlugin \
	--conf spark.memory.offHeap.enabled=true \
	--conf spark.memory.offHeap.size=${OFFHEAP_MB}m \
	--conf spark.executor.memory=${EXEC_MEMORY_MB}m \
	--conf spark.executor.cores=1 \
	--conf spark.cores.max=2 \
	--conf spark.task.maxFailures=4 \
	--conf "spark.executor.extraJavaOptions=-XX:MaxDirectMemorySize=4g" \
	--conf spark.driver.host=127.0.0.1 \
	--conf spark.driver.bindAddress=127.0.0.1 \
	--conf spark.ui.port="$DRIVER_UI" \
	--conf spark.eventLog.enabled=true \
	--conf spark.eventLog.dir="file://$EVENTS" \
	--conf spark.eventLog.compress=false \
	--conf spark.executor.heartbeatInterval=1s \
	--conf spark.nativepool.eventLog.sampleEvery=2 \
	--class org.nativepool.spark.clustertest.LostExecutorJob \
	"$app_jar" "$RUN" "$CG" "$PARTITIONS" >"$MAIN_OUT" 2>"$MAIN_ERR" &
main_pid=$!
pids+=($main_pid)
wait_for 360 "$MAIN_OUT" "^READY " "$main_pid" || { tail -30 "$MAIN_ERR"; exit 1; }
APP_ID=$(sed -n 's/^READY //p' "$MAIN_OUT")
say "application $APP_ID: job done in $(($(date +%s) - t0)) s, driver still up"

# the executors: A on the free Worker, B the one on worker2 that burst
EXEC_A=$(basename "$(ls -d "$WORK1/$APP_ID"/*/ | head -1)")
EXEC_B=$(basename "$(dirname "$(grep -l 'lost-executor-test: burst of' "$WORK2/$APP_ID"/*/stderr | head -1)")")
say "executor $EXEC_A (free), executor $EXEC_B (confined, burst)"

failed=()

# page_ok <html file> <what>: a chart (svg) under each executor's heading, and the diagnosis
page_ok() {
	python3 - "$1" "$EXEC_A" "$EXEC_B" <<'EOF'
import re, sys
html = open(sys.argv[1], encoding="utf-8", errors="replace").read()
ok = True
for ex in sys.argv[2:]:
    m = re.search(r'<h2 id="executor-%s">(.*?)</h2>(.*?)(?=<h2|$)' % re.escape(ex), html, re.S)
    if not m:
        print("  no heading for executor %s" % ex); ok = False; continue
    svgs = len(re.findall(r"<svg", m.group(2)))
    print("  executor %s: heading '%s', %d chart(s)" % (ex, re.sub(r"<[^>]+>", "", m.group(1)), svgs))
    if svgs < 1:
        ok = False
# the killed executor: the cause in its heading, the verdict under it, and the whole diagnosis
# (the end marker's hover text) naming the part that grew
m = re.search(r'<h2 id="executor-%s">(.*?)</h2>(.*?)(?=<h2|$)' % re.escape(sys.argv[3]), html, re.S)
if not m or "killed by its container" not in m.group(1):
    print("  executor %s's heading does not say its container killed it" % sys.argv[3]); ok = False
else:
    verdict = re.search(r'<p class="verdict">(.*?)</p>', m.group(2), re.S)
    grew = re.search(r"grew over the last [^:]*: ([^;<]*)", m.group(2))
    print("  verdict: %s" % (verdict.group(1) if verdict else None))
    print("  grew: %s" % (grew.group(1) if grew else None))
    if not verdict or "exit code 137" not in verdict.group(1) or not grew or "jvm.direct +" not in grew.group(1):
        print("  no diagnosis naming exit code 137 and jvm.direct under executor %s" % sys.argv[3]); ok = False
sys.exit(0 if ok else 1)
EOF
}

chromium_dom() { # chromium_dom <url> <out file>
	timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$RUN/chromium" \
		--dump-dom "$1" >"$2" 2>>"$RUN/chromium.log"
}

# ---- live checks: the driver is up ----
check_live_page_shows_both_executors() {
	local url="http://127.0.0.1:$DRIVER_UI/$PAGE/"
	# the Worker's exit code reaches the driver after the lost connection: wait for the diagnosis
	for _ in $(seq 30); do
		curl -fsSL "$url" -o "$RUN/live-page.curl.html" 2>/dev/null &&
			grep -q 'killed by its container' "$RUN/live-page.curl.html" && break
		sleep 1
	done
	chromium_dom "$url" "$RUN/live-page.html" || { echo "  chromium could not load $url"; return 1; }
	echo "  $url: $(wc -c <"$RUN/live-page.html") bytes of DOM"
	page_ok "$RUN/live-page.html"
}
check live_page_shows_both_executors check_live_page_shows_both_executors

touch "$RUN/release"
main_rc=0
wait "$main_pid" || main_rc=$?
JOB_SECONDS=$(($(date +%s) - t0))

check_job_survived_on_the_other_executor() {
	local n
	n=$(grep -c '^RESULT ' "$MAIN_OUT" || true)
	echo "  driver exit $main_rc, $n of $PARTITIONS RESULT lines:"
	grep '^RESULT ' "$MAIN_OUT" | sed 's/^/    /'
	[[ $main_rc == 0 && $n == "$PARTITIONS" ]] || { grep -E 'JOB FAILED|Exception' "$MAIN_ERR" | head -5; return 1; }
}

check_executor_killed_with_exit_code_137() {
	local line oom
	line=$(grep "Executor $APP_ID/$EXEC_B finished with state" "$RUN/worker2.log" | head -1)
	oom=$(awk '$1=="oom_kill"{print $2}' "$CG/memory.oom_control")
	echo "  worker2: ${line#*INFO }"
	echo "  $CG: oom_kill ${oom:-?}, failcnt $(cat "$CG/memory.failcnt")"
	grep -q "exitStatus 137" <<<"$line" && ((${oom:-0} >= 1))
}

check_driver_diagnosis_names_container_and_part() {
	local lines
	lines=$(grep "DriverSide: nativepool: executor $EXEC_B " "$MAIN_ERR" || true)
	[[ -n $lines ]] || { echo "  no diagnosis line for executor $EXEC_B"; return 1; }
	echo "$lines" | sed 's/^/  /'
	echo "$lines" | grep "WARN" | grep "killed by its container's memory limit" | grep -q "jvm.direct +"
}

# the application's event log as one file: Spark 4 writes a rolling log (a directory of parts)
# unless spark.eventLog.rolling.enabled=false
EVENT_LOG=$RUN/eventlog.json
if [[ -f $EVENTS/$APP_ID ]]; then
	cp "$EVENTS/$APP_ID" "$EVENT_LOG"
elif [[ -d $EVENTS/eventlog_v2_$APP_ID ]]; then
	ls "$EVENTS/eventlog_v2_$APP_ID"/events_* | sort -V | xargs cat >"$EVENT_LOG"
fi
check_event_log_holds_the_diagnosis() {
	[[ -s $EVENT_LOG ]] || { echo "  no event log of $APP_ID in $EVENTS"; ls "$EVENTS"; return 1; }
	local n
	n=$(grep '"Event":"org.nativepool.spark.events.ExecutorDiagnosisEvent"' "$EVENT_LOG" |
		grep -c "\"executorId\":\"$EXEC_B\"" || true)
	echo "  $n ExecutorDiagnosisEvent(s) for executor $EXEC_B in $EVENTS"
	grep '"Event":"org.nativepool.spark.events.ExecutorDiagnosisEvent"' "$EVENT_LOG" | grep "\"executorId\":\"$EXEC_B\"" | grep -o '"cause":"[^"]*"' | sed 's/^/    /'
	((n >= 1))
}

for c in check_job_survived_on_the_other_executor check_executor_killed_with_exit_code_137 \
	check_driver_diagnosis_names_container_and_part check_event_log_holds_the_diagnosis; do
	check "${c#check_}" "$c"
done

# ---- the History Server, the plugin jar on its classpath (as SPARK_DAEMON_CLASSPATH puts it) ----
"$JAVA" "${jvm_args[@]}" -Xmx512m -cp "$spark_cp:$plugin_jar" \
	-Dspark.history.fs.logDirectory="file://$EVENTS" -Dspark.history.ui.port="$HS_UI" \
	-Dspark.history.fs.update.interval=1s \
	org.apache.spark.deploy.history.HistoryServer >"$RUN/history.log" 2>&1 &
pids+=($!)
hs_pid=$!
check_history_page_shows_both_executors() {
	local url="http://127.0.0.1:$HS_UI/history/$APP_ID/$PAGE/"
	for _ in $(seq 120); do
		curl -fsS "http://127.0.0.1:$HS_UI/api/v1/applications" 2>/dev/null | grep -q "\"$APP_ID\"" && break
		kill -0 "$hs_pid" 2>/dev/null || { echo "  the History Server exited"; tail -5 "$RUN/history.log"; return 1; }
		sleep 1
	done
	curl -fsSL "$url" -o "$RUN/history-page.curl.html" || { echo "  $url: not served"; return 1; }
	chromium_dom "$url" "$RUN/history-page.html" || { echo "  chromium could not load $url"; return 1; }
	echo "  $url: $(wc -c <"$RUN/history-page.html") bytes of DOM"
	page_ok "$RUN/history-page.html" || return 1
	timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$RUN/chromium" \
		--hide-scrollbars --window-size=1400,2000 --screenshot="$RUN/native-memory.png" "$url" \
		>>"$RUN/chromium.log" 2>&1 || true
	[[ -s $RUN/native-memory.png ]] || { echo "  no screenshot"; return 1; }
	echo "  screenshot $RUN/native-memory.png ($(wc -c <"$RUN/native-memory.png") bytes)"
}
check history_page_shows_both_executors check_history_page_shows_both_executors

# ---- a job shorter than one sampling period, at Spark's and the plugin's default rates (a
# heartbeat every 10 s, a sample in the event log a minute): its live page must chart every
# executor, from the samples of their start and task ends ----
SHORT_OUT=$RUN/short.out
timeout --kill-after=10 240 "$JAVA" "${jvm_args[@]}" -Xmx512m -cp "$spark_cp" \
	org.apache.spark.deploy.SparkSubmit \
	--master "$MASTER_URL" --deploy-mode client \
	--jars "$plugin_jar" \
	--conf spark.plugins=org.nativepool.spark.NativePoolPlugin \
	--conf spark.memory.offHeap.enabled=true \
	--conf spark.memory.offHeap.size=${OFFHEAP_MB}m \
	--conf spark.executor.memory=${EXEC_MEMORY_MB}m \
	--conf spark.executor.cores=1 \
	--conf spark.cores.max=2 \
	--conf spark.driver.host=127.0.0.1 \
	--conf spark.driver.bindAddress=127.0.0.1 \
	--conf spark.ui.port="$SHORT_UI" \
	--class org.nativepool.spark.clustertest.ShortJob \
	"$app_jar" "$RUN" 4 >"$SHORT_OUT" 2>"$RUN/short.err" &
short_pid=$!
pids+=($short_pid)
check_short_job_page_charts_every_executor() {
	wait_for 200 "$SHORT_OUT" "^READY " "$short_pid" || { tail -20 "$RUN/short.err"; return 1; }
	local url="http://127.0.0.1:$SHORT_UI/$PAGE/"
	sed -n 's/^JOB /  job: /p' "$SHORT_OUT"
	# the last task end's sample travels after the job's end: give it a moment
	sleep 2
	chromium_dom "$url" "$RUN/short-page.html" || { echo "  chromium could not load $url"; return 1; }
	echo "  $url: $(wc -c <"$RUN/short-page.html") bytes of DOM"
	python3 - "$RUN/short-page.html" "$SHORT_OUT" <<'PYEOF'
import re, sys
html = open(sys.argv[1], encoding="utf-8", errors="replace").read()
job = open(sys.argv[2]).read()
ms = int(re.search(r"^JOB (\d+) ms", job, re.M).group(1))
execs = sorted(set(re.findall(r"[\w.-]+", re.search(r"^JOB \d+ ms on \[(.*)\]", job, re.M).group(1))))
ok = ms < 60_000
print("  the job took %d ms, %s one sampling period (60 s)" % (ms, "under" if ok else "NOT under"))
for ex in execs:
    m = re.search(r'<h2 id="executor-%s">(.*?)</h2>(.*?)(?=<h2|$)' % re.escape(ex), html, re.S)
    if not m:
        print("  no heading for executor %s" % ex); ok = False; continue
    pts = [int(x) for x in re.findall(r'<svg[^>]*data-samples="(\d+)"', m.group(2))]
    print("  executor %s: chart(s) with %s sample(s)" % (ex, pts))
    if not pts or pts[0] < 2 or "a chart needs two" in m.group(2):
        print("  executor %s has no chart of two points or more" % ex); ok = False
sys.exit(0 if ok and execs else 1)
PYEOF
}
check short_job_page_charts_every_executor check_short_job_page_charts_every_executor
touch "$RUN/release-short"
wait "$short_pid" || true

# ---- measured: the event log's samples per executor-hour, the page's timeline ----
if [[ -s $EVENT_LOG ]]; then
	python3 - "$EVENT_LOG" 2 <<'EOF'
import json, sys
every_s = float(sys.argv[2])  # this run: one sample per executor every 2 s (heartbeat 1 s x sampleEvery 2)
n = size = 0
span = {}
for line in open(sys.argv[1], encoding="utf-8"):
    ev = json.loads(line)
    if ev["Event"].endswith(".ExecutorSampleEvent"):
        n += 1
        size += len(line.encode())
        lo, hi = span.get(ev["executorId"], (ev["timeMillis"], ev["timeMillis"]))
        span[ev["executorId"]] = (min(lo, ev["timeMillis"]), max(hi, ev["timeMillis"]))
# each executor's time covered by its samples, one interval each added for the last
hours = sum((hi - lo) / 1000.0 + every_s for lo, hi in span.values()) / 3600
per = size / max(n, 1)
print("MEASURED event log: %d ExecutorSampleEvent of %d executors, %d bytes (%.0f each), %.2f executor-minutes:"
      " %.0f KB per executor-hour at this run's rate (one per %g s); at the default rate (one a minute) %.0f KB"
      % (n, len(span), size, per, hours * 60, size / hours / 1024, every_s, per * 60 / 1024))
EOF
	"$JAVA" -cp "$spark_cp:$plugin_jar:$RUN/classes" org.nativepool.spark.clustertest.TimelineSize \
		"$EVENT_LOG" 2>"$RUN/timeline-size.err" | sed 's/^/MEASURED /' || true
fi

say "job $JOB_SECONDS s from submit to the driver's exit"
if ((${#failed[@]} > 0)); then
	say "FAILED: ${failed[*]} (logs in $RUN)"
	exit 1
fi
say "all checks passed (logs in $RUN)"
