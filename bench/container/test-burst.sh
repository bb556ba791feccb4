#!/usr/bin/env bash
# The pod guard's test (`make test` runs it as part of test-container): a job inside a memory
# cgroup sized like a Kubernetes executor pod at the job's survival point without a burst,
#
#   limit = heap (1 GiB) + off-heap (64 MiB) + the job's smallest surviving overhead,
#
# while a JVM thread takes memory nobody accounts for: direct buffers growing over about two
# seconds, held for ten, then freed (the demo's and CometSortBench's --burst). Each job runs twice:
#
#   without the guard   must be OOM-killed (exit 137): the test can fail, the burst is deadly;
#   with the guard      must exit 0 with a correct result, and its report must show a guard
#                       episode in which memory gave way.
#
# The jobs:
#   sort    the native sort alone (the demo's --job sort), a 40 MiB burst; without the guard:
#           --guard false.
#   spark   a plain Spark SQL job in off-heap mode with no native engine at all (bench/comet's
#           CometSortBench --engine spark: Tungsten's off-heap sort, which spills), with
#           nativepool's plugin beside it as the guard, a 64 MiB burst at 352 MiB of overhead:
#           without the plugin the job needs 400 MiB to live through that burst, with it 336
#           (bench/RESULTS.md, "Pod guard beside Spark and Comet"); without the guard: no plugin
#           at all. Nothing of the job is nativepool's: the guard holds Spark's free off-heap
#           memory and the sorters spill at their next page, on their own threads.
#   demo    the full demo: the native sort beside Spark's own off-heap hash aggregation, a 48 MiB
#           burst at 288 MiB, 16 MiB over its survival point without a burst with the guard off
#           (272; 256 with it on). Without the guard the burst killed it at 288 in every run (bench/
#           RESULTS.md, "Pod guard beside Spark and Comet", gives the runs of each cell). The guard
#           moves the native sort's spill and holds Spark's free off-heap memory; the
#           aggregation's maps take every group in the first seconds of a task and ask Spark for
#           no page after that, so nothing of theirs gives way until their task ends. After an
#           episode the pools may keep their spill as ballast (the pod within two reserves of its
#           limit), which Spark counts against their tasks: a task whose share the aggregation
#           holds gets nothing from Spark for its sort's merge, which cannot spill, and the guard
#           lends it the ballast (pool.Gatherer), which is what keeps that task alive.
#
# No run gets a second chance: a guarded run that is killed fails the test. The guard writes the
# spill files' dirty pages back (sync_file_range on the files spills wrote) and drops them from
# the page cache, so that what a spill frees leaves the memory group, which cannot reclaim a
# dirty page; peak_dirty in each run's line says how much was dirty at most.
#
# Environment: TEST_BURST_JOBS (default "sort spark demo"); TEST_BURST_SORT (40m),
# TEST_BURST_DEMO (48m), TEST_BURST_SPARK (64m), the bursts; TEST_BURST_SORT_OVERHEAD_MIB (240),
# TEST_BURST_DEMO_OVERHEAD_MIB (288), TEST_BURST_SPARK_OVERHEAD_MIB (352), the overheads (the
# sort's is its survival point without a burst; bench/RESULTS.md, "Container" and "Pod guard
# beside Spark and Comet").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

jobs=${TEST_BURST_JOBS:-sort spark demo}
rows=32000000
heap_mib=1024
budget_mib=64
out_root=build/test-burst

if [[ ! -w /sys/fs/cgroup/memory ]]; then
	echo "test-burst: SKIPPED: no writable cgroup-v1 memory controller at /sys/fs/cgroup/memory (needs root)"
	exit 0
fi

# prop KEY FILE: a value of report.properties.
prop() { grep "^$1=" "$2" | tail -1 | cut -d= -f2-; }

plugin_jar=
if [[ " $jobs " == *" spark "* ]]; then
	make -s jar >/dev/null
	plugin_jar=$(ls "$root"/spark/target/nativepool-spark-spark4.1_2.13-*.jar | grep -v -e sources -e javadoc -e original | head -1)
fi

failed=0
for job in $jobs; do
	case $job in
	sort) overhead=${TEST_BURST_SORT_OVERHEAD_MIB:-240} burst=${TEST_BURST_SORT:-40m} ;;
	demo) overhead=${TEST_BURST_DEMO_OVERHEAD_MIB:-288} burst=${TEST_BURST_DEMO:-48m} ;;
	spark) overhead=${TEST_BURST_SPARK_OVERHEAD_MIB:-352} burst=${TEST_BURST_SPARK:-64m} ;;
	*) echo "test-burst: unknown job $job" >&2; exit 2 ;;
	esac
	limit=$(((heap_mib + budget_mib + overhead) << 20))
	for guard in false true; do
		out=$out_root/$job-guard-$guard
		rm -rf "$out"
		mkdir -p "$out"
		echo "test-burst: $job, $rows rows, burst $burst, guard $guard, in a cgroup of $((limit >> 20)) MiB" \
			"(heap $heap_mib + off-heap $budget_mib + overhead $overhead MiB)"
		rc=0
		if [[ $job == spark ]]; then
			np=none
			[[ $guard == true ]] && np=guard
			bash bench/container/cgrun.sh --name "nativepool-burst-$$" --limit "$limit" --timeout 600 -- \
				env HEAP=${heap_mib}m NATIVEPOOL_JAR="$plugin_jar" TMPDIR="$root/$out" bash bench/comet/run.sh \
				--engine spark --nativepool "$np" --rows "$rows" --budget "${budget_mib}m" \
				--burst "$burst" --burst-at 2 --burst-ramp 2 --burst-hold 10 >"$out/output.txt" 2>&1 || rc=$?
		else
			bash bench/container/cgrun.sh --name "nativepool-burst-$$" --limit "$limit" --timeout 600 --env DEMO_CGROUP -- \
				env DEMO_HEAP=${heap_mib}m DEMO_NMT=off NO_COLOR=1 bash examples/spark/run.sh --job "$job" --rows "$rows" \
				--budget "${budget_mib}m" --burst "$burst" --burst-at 2 --burst-ramp 2 --burst-hold 10 --guard "$guard" \
				--out "$out" >"$out/output.txt" 2>&1 || rc=$?
		fi
		if [[ $rc -eq 3 ]]; then
			echo "test-burst: SKIPPED: $(tail -1 "$out/output.txt")"
			exit 0
		fi
		grep -E '^(exit|limit|peak|peak_rss|peak_dirty|oom_kills|seconds)=' "$out/output.txt" | tr '\n' ' '
		echo
		if [[ $guard == false ]]; then
			if [[ $rc -eq 137 ]]; then
				echo "test-burst: ok: without the guard the burst killed the executor (exit 137)"
			else
				echo "test-burst: FAILED: without the guard the run should have been OOM-killed, got exit $rc;" \
					"the test would not notice a guard that does nothing"
				tail -30 "$out/output.txt"
				failed=1
			fi
			continue
		fi
		if [[ $rc -ne 0 ]]; then
			echo "test-burst: FAILED: with the guard: exit $rc (137: killed over the limit; 124: stalled; 1: wrong result)"
			grep -E 'pod guard|WARN guard' "$out/output.txt" | cut -c1-400 | tail -8
			tail -20 "$out/output.txt"
			failed=1
			continue
		fi
		if [[ $job == spark ]]; then
			# CometSortBench checked the sort's output (exit 1 otherwise); the plugin's executor
			# logged each guard episode at WARN.
			episodes=$(grep -c 'pod guard episode [0-9]*: the headroom fell' "$out/output.txt" || true)
			held=$(grep -c "held Spark's free off-heap memory" "$out/output.txt" || true)
			grep -E 'RESULT|pod guard episode' "$out/output.txt" | cut -c1-400 || true
			if ! grep -q 'ok=true' "$out/output.txt"; then
				echo "test-burst: FAILED: the sort's output was wrong"
				failed=1
			elif [[ ${episodes:-0} -lt 1 || ${held:-0} -lt 1 ]]; then
				echo "test-burst: FAILED: no guard episode in which Spark's off-heap memory was held" \
					"(episodes $episodes, holding $held)"
				failed=1
			else
				echo "test-burst: ok: survived with the guard beside plain Spark, $episodes episode(s), $held holding Spark's memory"
			fi
			continue
		fi
		report=$out/report.properties
		if [[ ! -s $report ]]; then
			echo "test-burst: FAILED: with the guard: no report"
			tail -40 "$out/output.txt"
			failed=1
			continue
		fi
		grep -E '^  (correctness|burst|pod guard|  episode)' "$out/output.txt" | cut -c1-300 || true
		episodes=$(prop guard.episodes "$report")
		spilled=$(prop guard.spilled "$report")
		held=$(prop guard.offHeapTaken "$report")
		started=$(prop burst.startedMs "$report")
		if [[ $(prop ok "$report") != true ]]; then
			echo "test-burst: FAILED: the result is wrong"
			failed=1
		elif [[ ${started:--1} -lt 0 ]]; then
			echo "test-burst: FAILED: the burst never started (the job ended first?)"
			failed=1
		elif [[ ${episodes:-0} -lt 1 || $((${spilled:-0} + ${held:-0})) -le 0 ]]; then
			echo "test-burst: FAILED: the report shows no guard episode in which memory gave way" \
				"(episodes ${episodes:-?}, spilled ${spilled:-?}, Spark's off-heap memory held ${held:-?})"
			failed=1
		else
			echo "test-burst: ok: survived with the guard, $episodes episode(s), $((spilled >> 20)) MiB spilled by native" \
				"consumers, $((held >> 20)) MiB of Spark's off-heap memory held"
		fi
	done
done
if [[ $failed -ne 0 ]]; then
	echo "test-burst: FAILED"
	exit 1
fi
echo "test-burst: ok"
