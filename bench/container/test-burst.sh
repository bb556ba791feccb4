#!/usr/bin/env bash
# The pod guard's test (`make test` runs it as part of test-container): the demo inside a memory
# cgroup sized like a Kubernetes executor pod at the job's survival point without a burst,
#
#   limit = heap (1 GiB) + off-heap (64 MiB) + the job's smallest surviving overhead,
#
# while a JVM thread takes memory nobody accounts for: direct buffers growing over about two
# seconds, held for ten, then freed (the demo's --burst). Each job runs twice:
#
#   --guard false   must be OOM-killed (exit 137): the test can fail, the burst is deadly;
#   --guard true    must exit 0 with a correct result, and its report must show a guard episode
#                   in which native memory gave way.
#
# The jobs: the native sort alone (--job sort) with a 40 MiB burst, and the full demo, whose Spark
# aggregation shares the off-heap pool, with a 16 MiB burst: the bytes the sort gives up stay with
# it as ballast instead of going to Spark's consumers, which would otherwise grow into them. The
# guard can only make native memory give way, so a burst is survivable when it is no larger than
# the native memory held: the demo's native sorts hold at most their 16 MiB pools each, beside the
# aggregation. Without a writable cgroup-v1 memory controller it is skipped with a message.
#
# A run with the guard that is OOM-killed is run once more, saying so, and the test fails only if
# the second is killed too. At the survival point the margin is the reserve alone, and what native
# memory spills leaves the process only when the kernel has written the spill files' dirty pages:
# under cgroup v1 a dirty page cannot be reclaimed, so a slow disk can still tip a run over the
# limit (peak_dirty in the run's line says how much was dirty). The run without the guard gets no
# second chance: it must be killed every time.
#
# Environment: TEST_BURST_JOBS (default "sort demo"); TEST_BURST_SORT (40m) and TEST_BURST_DEMO
# (16m), the bursts; TEST_BURST_SORT_OVERHEAD_MIB (240) and TEST_BURST_DEMO_OVERHEAD_MIB (256), the
# survival points without a burst (bench/RESULTS.md, "Container").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

jobs=${TEST_BURST_JOBS:-sort demo}
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

failed=0
for job in $jobs; do
	case $job in
	sort) overhead=${TEST_BURST_SORT_OVERHEAD_MIB:-240} burst=${TEST_BURST_SORT:-40m} ;;
	demo) overhead=${TEST_BURST_DEMO_OVERHEAD_MIB:-256} burst=${TEST_BURST_DEMO:-16m} ;;
	*) echo "test-burst: unknown job $job" >&2; exit 2 ;;
	esac
	limit=$(((heap_mib + budget_mib + overhead) << 20))
	for run in false true true-again; do
		guard=${run%-again}
		if [[ $run == true-again ]]; then
			[[ ${last_rc:-0} -eq 137 ]] || continue
			echo "test-burst: the run with the guard was OOM-killed; once more (see above: dirty spill pages," \
				"peak_dirty=$(grep '^peak_dirty=' "$out/output.txt" | cut -d= -f2))"
		fi
		out=$out_root/$job-guard-$run
		rm -rf "$out"
		mkdir -p "$out"
		echo "test-burst: --job $job --rows $rows, burst $burst, guard $guard, in a cgroup of $((limit >> 20)) MiB" \
			"(heap $heap_mib + off-heap $budget_mib + overhead $overhead MiB)"
		rc=0
		bash bench/container/cgrun.sh --name "nativepool-burst-$$" --limit "$limit" --timeout 600 --env DEMO_CGROUP -- \
			env DEMO_HEAP=${heap_mib}m DEMO_NMT=off NO_COLOR=1 bash examples/spark/run.sh --job "$job" --rows "$rows" \
			--budget "${budget_mib}m" --burst "$burst" --burst-at 2 --burst-ramp 2 --burst-hold 10 --guard "$guard" \
			--out "$out" >"$out/output.txt" 2>&1 || rc=$?
		if [[ $rc -eq 3 ]]; then
			echo "test-burst: SKIPPED: $(tail -1 "$out/output.txt")"
			exit 0
		fi
		grep -E '^(exit|limit|peak|peak_rss|oom_kills|seconds)=' "$out/output.txt" | tr '\n' ' '
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
		last_rc=$rc
		if [[ $rc -eq 137 && $run == true ]]; then
			tail -8 "$out/output.txt"
			continue
		fi
		report=$out/report.properties
		if [[ $rc -ne 0 || ! -s $report ]]; then
			echo "test-burst: FAILED: with the guard: exit $rc (137: killed over the limit; 124: stalled; 1: wrong result)"
			tail -40 "$out/output.txt"
			failed=1
			continue
		fi
		grep -E '^  (correctness|burst|pod guard|  episode)' "$out/output.txt" | cut -c1-220 || true
		episodes=$(prop guard.episodes "$report")
		spilled=$(prop guard.spilled "$report")
		started=$(prop burst.startedMs "$report")
		if [[ $(prop ok "$report") != true ]]; then
			echo "test-burst: FAILED: the result is wrong"
			failed=1
		elif [[ ${started:--1} -lt 0 ]]; then
			echo "test-burst: FAILED: the burst never started (the job ended first?)"
			failed=1
		elif [[ ${episodes:-0} -lt 1 || ${spilled:-0} -le 0 ]]; then
			echo "test-burst: FAILED: the report shows no guard episode in which native memory gave way" \
				"(episodes ${episodes:-?}, spilled ${spilled:-?})"
			failed=1
		else
			echo "test-burst: ok: survived with the guard, $episodes episode(s), $((spilled >> 20)) MiB spilled into ballast"
		fi
	done
done
if [[ $failed -ne 0 ]]; then
	echo "test-burst: FAILED"
	exit 1
fi
echo "test-burst: ok"
