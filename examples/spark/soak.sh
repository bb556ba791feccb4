#!/usr/bin/env bash
# The streaming soak (`make soak`, `make soak-smoke`): builds like run.sh (build.sh), then runs
# org.nativepool.spark.example.StreamingSoak twice, each in a JVM of its own started here (not
# inside Maven): the clean run for SOAK_MINUTES minutes, then the planted-leak run. Each is a
# local[2] Spark 4.1 Structured Streaming query (rate source → native Go aggregation over the Arrow
# C Data Interface, both ways → foreachBatch sink) with the nativepool plugin
# (examples/spark/README.md, "The streaming soak").
#
#   bash examples/spark/soak.sh [StreamingSoak options...]      both runs
#   SOAK_RUNS=clean bash examples/spark/soak.sh                 the clean run only (or leak)
#
# Options are StreamingSoak's (--help lists them), given to both runs. Outputs in build/soak/:
# ledger.csv and trend.md (the clean run's readings and verdict), ledger.png (its ledger, stacked),
# leak-ledger.csv and leak.md (the leak run's).
# Environment: SOAK_MINUTES (the clean run, default 60); SOAK_RUNS (clean, leak or both, the
# default); SOAK_HEAP (the JVM heap, default 768m; -Xms = -Xmx, pre-touched, so heap growth is no
# RSS growth); SOAK_NMT (Native Memory Tracking, default summary: the ledger then names the JVM's
# threads and native memory); SOAK_JIT (c1, the default, or tiered: see below); SOAK_JAVA_OPTS
# (more JVM options); NATIVEPOOL_LOG_LEVEL (default warn); JAVA_HOME. Exit status: 0 when every
# run passed.
#
# The JIT: every micro-batch plans a new query, so Spark's planner and scheduler (about 20,000
# methods here) run a few times a second, and with the JVM's default tiered thresholds they keep
# being compiled for the whole hour (a method run once per micro-batch reaches C1's profiled tier
# after 200 micro-batches and C2 after 5,000). The code cache's committed bytes, and RSS with them,
# then climb through the run (measured: 40 -> 58 MiB between the first and the fifth minute, still
# ~700 compilations per 30 s at minute 4), and the growth detector reports jvm.codeCache in the
# first minute. SOAK_JIT=c1 compiles with C1 only, at a tenth of the thresholds, into a segmented
# code cache of 256 MiB, so that the JIT's warm-up ends within the verdict's warm-up and what the
# verdict then judges is the job's memory. SOAK_JIT=tiered runs the JVM's defaults.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

minutes=${SOAK_MINUTES:-60}
runs=${SOAK_RUNS:-both}
heap=${SOAK_HEAP:-768m}
nmt=${SOAK_NMT:-summary}
jit=${SOAK_JIT:-c1}
out=build/soak
if ! [[ $minutes =~ ^[0-9]+$ && $minutes -gt 0 ]]; then
	echo "soak.sh: SOAK_MINUTES=$minutes is not a whole number of minutes > 0" >&2
	exit 2
fi
case $runs in
both | clean | leak) ;;
*)
	echo "soak.sh: SOAK_RUNS=$runs: expected clean, leak or both" >&2
	exit 2
	;;
esac
case $jit in
c1) jit_opts=(-XX:TieredStopAtLevel=1 -XX:CompileThresholdScaling=0.1 -XX:+SegmentedCodeCache -XX:ReservedCodeCacheSize=256m) ;;
tiered) jit_opts=() ;;
*)
	echo "soak.sh: SOAK_JIT=$jit: expected c1 or tiered" >&2
	exit 2
	;;
esac

start=$(date +%s)
# Builds libnativesort.so, libnativepool.so and both jars; sets JAVA_HOME, lib, jar and cp_file.
# shellcheck source=examples/spark/build.sh
source examples/spark/build.sh
mkdir -p "$out"

export NATIVEPOOL_LOG_LEVEL=${NATIVEPOOL_LOG_LEVEL:-warn}
log_level=()
case ${NATIVEPOOL_LOG_LEVEL,,} in
trace | debug | info | warn | error | off) log_level=(-Dspark.nativepool.logLevel="$NATIVEPOOL_LOG_LEVEL") ;;
*) echo "soak.sh: NATIVEPOOL_LOG_LEVEL=$NATIVEPOOL_LOG_LEVEL is no log4j level; log4j2.properties decides" >&2 ;;
esac
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-127.0.0.1}

# shellcheck disable=SC2206 # SOAK_JAVA_OPTS is a list of options
java_cmd=("$JAVA_HOME/bin/java" "@$root/spark/spark-jvm.args"
	-Xms"$heap" -Xmx"$heap" -XX:+AlwaysPreTouch -XX:NativeMemoryTracking="$nmt" "${jit_opts[@]}" ${SOAK_JAVA_OPTS:-}
	-Dlog4j2.configurationFile="$root/examples/spark/log4j2.properties"
	"${log_level[@]}"
	-Dnativepool.library="$root/$lib"
	-cp "$jar:$(cat "$cp_file")"
	org.nativepool.spark.example.StreamingSoak --library "$root/$lib" --out "$out")

clean_rc=skipped
leak_rc=skipped
if [[ $runs != leak ]]; then
	echo "soak.sh: clean run, $minutes min (JIT: $jit)" >&2
	clean_rc=0
	"${java_cmd[@]}" --duration "${minutes}m" "$@" || clean_rc=$?
	[[ $clean_rc -eq 2 ]] && exit 2 # usage
	if [[ -s $out/ledger.csv ]]; then
		# The header's unexplained column makes examples/chart draw stacked areas.
		go run ./examples/chart -in "$out/ledger.csv" -out "$out/ledger.png" \
			-title "Streaming soak: the executor memory ledger over $minutes min (RSS split by owner, NMT $nmt)" &&
			echo "ledger chart: $out/ledger.png"
	fi
fi
if [[ $runs != clean ]]; then
	echo "soak.sh: leak run" >&2
	leak_rc=0
	"${java_cmd[@]}" --leak "$@" || leak_rc=$?
fi
verdict() {
	case $1 in
	0) echo PASS ;;
	skipped) echo skipped ;;
	*) echo "FAIL (exit $1)" ;;
	esac
}
echo "soak.sh: clean run $(verdict "$clean_rc"), leak run $(verdict "$leak_rc"); $(($(date +%s) - start)) s in all, build included"
[[ $clean_rc == 0 || $clean_rc == skipped ]] && [[ $leak_rc == 0 || $leak_rc == skipped ]]
