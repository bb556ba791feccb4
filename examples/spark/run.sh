#!/usr/bin/env bash
# The Spark demo (`make example`): builds libnativesort.so (the Go sort plus every nativepool
# native, one Go runtime) and the Java modules, then runs org.nativepool.spark.example.SortDemo in
# a local[2] Spark 4.1 with the nativepool plugin, prints the report, and draws the memory chart.
#
#   bash examples/spark/run.sh [--rows N] [--budget 64m] [--chunk 2m] [--pool fair_unified|greedy_unified] ...
#
# Options are SortDemo's (--help lists them, without building anything). Outputs: build/demo/samples.csv,
# build/demo/ledger.csv, build/demo/report.properties, build/demo/chart.png (reserved vs allocated
# vs RSS), build/demo/ledger.png (the executor memory ledger, stacked), and, for a run with the
# default options and NATIVEPOOL_UPDATE_DOCS=1, copies of both charts in docs/demo-chart.png and
# docs/demo-ledger.png (the README shows them).
# Environment: JAVA_HOME (default: the JDK of javac); DEMO_HEAP (JVM heap, default 1g; -Xms = -Xmx
# and pre-touched, so heap growth does not count as RSS growth); DEMO_NMT (the JVM's Native Memory
# Tracking, default summary, so that the ledger has the JVM's threads, own native memory and
# Unsafe allocations as parts instead of unexplained; off to run without it); DEMO_JAVA_OPTS (more
# JVM options, after DEMO_NMT's); DEMO_CGROUP (a memory cgroup directory, e.g.
# /sys/fs/cgroup/memory/demo or, on cgroup v2, /sys/fs/cgroup/demo: the demo JVM alone is put in
# it, see below); NATIVEPOOL_LOG_LEVEL. The script sets no glibc tunable: the library sets its
# allocator policy itself, and the report names any MALLOC_* variable the caller set.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

# --help: this header's words and SortDemo's options (their one copy, usage.txt), built nothing.
for a in "$@"; do
	if [[ $a == -h || $a == --help ]]; then
		sed -n '2,/^set -euo pipefail/{/^#/s/^# \{0,1\}//p}' "$0"
		echo
		cat examples/spark/src/main/resources/org/nativepool/spark/example/usage.txt
		exit 0
	fi
done

heap=${DEMO_HEAP:-1g}
nmt=${DEMO_NMT:-summary}
out=build/demo

# Builds libnativesort.so, libnativepool.so and both jars; sets JAVA_HOME, lib, jar and cp_file.
# shellcheck source=examples/spark/build.sh
source examples/spark/build.sh
mkdir -p "$out"

# Spark's Java 17 module options: the one copy is spark/spark-jvm.args (a java @argfile).
opens=("@$root/spark/spark-jvm.args")

# Warnings and errors of the Go side (leaks, late releases, failed spillers) reach the output;
# NATIVEPOOL_LOG_LEVEL=debug shows every spill request too. Once the plugin has started, Go's
# records go through log4j: the level reaches it as spark.nativepool.logLevel (a system property,
# which SparkConf reads); before that, the engine's init applies it to Go's default logger.
export NATIVEPOOL_LOG_LEVEL=${NATIVEPOOL_LOG_LEVEL:-warn}
log_level=()
case ${NATIVEPOOL_LOG_LEVEL,,} in
trace | debug | info | warn | error | off) log_level=(-Dspark.nativepool.logLevel="$NATIVEPOOL_LOG_LEVEL") ;;
*) echo "run.sh: NATIVEPOOL_LOG_LEVEL=$NATIVEPOOL_LOG_LEVEL is no log4j level; log4j2.properties decides" >&2 ;;
esac
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}
# The demo JVM is this script's child, not Maven's: with DEMO_CGROUP it is started by a shell that
# writes its own pid into the cgroup's cgroup.procs and then execs java, so the JVM, and only it
# (not this script, Maven or go), is in the cgroup from its first byte; the report then states the
# cgroup's peak. A harness can instead write the JVM's pid into cgroup.procs itself.
launch=()
if [[ -n ${DEMO_CGROUP:-} ]]; then
	if [[ ! -w $DEMO_CGROUP/cgroup.procs ]]; then
		echo "run.sh: DEMO_CGROUP=$DEMO_CGROUP: no writable cgroup.procs there" >&2
		exit 2
	fi
	launch=(bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$DEMO_CGROUP")
fi
rc=0
# shellcheck disable=SC2086 # DEMO_JAVA_OPTS is a list of options
"${launch[@]}" "$JAVA_HOME/bin/java" "${opens[@]}" \
	-Xms"$heap" -Xmx"$heap" -XX:+AlwaysPreTouch -XX:NativeMemoryTracking="$nmt" ${DEMO_JAVA_OPTS:-} \
	-Dlog4j2.configurationFile="$root/examples/spark/log4j2.properties" \
	"${log_level[@]}" \
	-Dnativepool.library="$root/$lib" \
	-cp "$jar:$(cat "$cp_file")" \
	org.nativepool.spark.example.SortDemo --library "$root/$lib" --out "$out" "$@" || rc=$?
if [[ $rc -eq 2 ]]; then
	exit 2 # usage
fi
if [[ -s $out/samples.csv ]]; then
	go run ./examples/chart -in "$out/samples.csv" -out "$out/chart.png" \
		-title "Spark demo: off-heap reserved (Spark's view) vs native allocated vs RSS growth" \
		-legend "rss=RSS growth (process);reserved=off-heap reserved, Spark's view (native + Spark);held=native pools, held from Spark;allocated=native allocated (Arrow buffers);burst=direct buffers outside any accounting (burst);ballast=ballast: what the pod guard keeps from Spark's consumers"
	echo "chart: $out/chart.png"
	if [[ $# -eq 0 && $rc -eq 0 && ${NATIVEPOOL_UPDATE_DOCS:-0} == 1 ]]; then
		# The README shows a default run's chart; refresh it only when asked,
		# so that a newcomer's run leaves the checkout clean.
		mkdir -p docs
		cp "$out/chart.png" docs/demo-chart.png
		echo "chart copied to docs/demo-chart.png"
	fi
fi
if [[ -s $out/ledger.csv ]]; then
	# The header's unexplained column makes examples/chart draw stacked areas.
	go run ./examples/chart -in "$out/ledger.csv" -out "$out/ledger.png" \
		-title "Spark demo: the executor memory ledger (RSS split by owner, NMT $nmt)"
	echo "ledger chart: $out/ledger.png"
	if [[ $# -eq 0 && $rc -eq 0 && ${NATIVEPOOL_UPDATE_DOCS:-0} == 1 ]]; then
		mkdir -p docs
		cp "$out/ledger.png" docs/demo-ledger.png
		echo "ledger chart copied to docs/demo-ledger.png"
	fi
fi
exit $rc
