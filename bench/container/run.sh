#!/usr/bin/env bash
# `make bench-container`: each system's smallest surviving memoryOverhead under a memory cgroup
# sized like a Kubernetes executor pod (limit = heap + off-heap + overhead), bisected in 16 MiB
# steps by bench/container/bisect.sh, on the same job for both systems:
#
#   sort      a sort of N rows with the whole off-heap budget usable by the native sort, its output
#             checked and dropped in the task: Comet 1.2's (bench/comet, fair_unified) and ours (the
#             demo's --job sort: the Go external sort, fair_unified with the pool as large as the
#             budget)
#   demo      nativepool's full demo, with its Spark aggregation
#   idle      the idle-JVM baseline: the same JVM and Spark session, library loaded, running a
#             tiny job (ours: 2 rows; Comet's: 20,000 rows, the smallest its bench runs natively)
#
#   bash bench/container/run.sh [CELL ...]      (no argument: every cell below)
#
# A cell is SYSTEM:JOB:ROWS:OFFHEAP:GLIBC:START[:BURST], GLIBC "mmap" (MALLOC_MMAP_THRESHOLD_=131072 in
# the environment) or "none" (nativepool then still sets its own allocator policy when it loads:
# spark.nativepool.mallocMmapThreshold, default 128k; Comet sets none), START the first overhead tried in MiB (near the expected answer),
# BURST (optional) memory the JVM takes outside any accounting during the job, SIZE/RAMP: direct
# buffers of SIZE taken 2 s into the job (once off-heap memory is in use) over RAMP seconds in 4 MiB
# steps (0: at once), held 10 s, then freed (the demo's and Comet's bench's --burst options).
# SYSTEM "nativepool-noguard" is ours with the pod guard off (spark.nativepool.guard.enabled=false).
# SYSTEM "spark" is a plain Spark SQL job in off-heap mode with no native engine (CometSortBench
# --engine spark: Tungsten's off-heap sort, which spills), "spark+nativepool" the same with
# nativepool's plugin beside it as the guard; "comet+nativepool" is Comet's sort with nativepool's
# plugin beside it (both in spark.plugins, no nativepool engine in the job). JOB is "sort" for
# them.
# Results: one `result …` line per cell on stdout and in build/bench-container/results.txt, every
# run's line in runs.txt and its job log (stderr) in logs/LABEL-OVERHEAD.err. Needs root and
# cgroup v1 (exit 3 without).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=build/bench-container
mkdir -p "$out"
heap_mib=1024

cells=("$@")
if [[ ${#cells[@]} -eq 0 ]]; then
	cells=(
		nativepool:sort:32000000:64:none:240
		nativepool:idle:2:64:none:192
		nativepool:sort:128000000:64:none:240
		comet:sort:32000000:64:none:416
		comet:idle:20000:64:none:256
		comet:sort:128000000:64:none:576
		nativepool:sort:32000000:256:none:240
		comet:sort:32000000:256:none:448
		nativepool:sort:32000000:64:mmap:240
		comet:sort:32000000:64:mmap:368
		nativepool:sort:32000000:256:mmap:240
		comet:sort:32000000:256:mmap:400
		nativepool:demo:32000000:64:none:272
		nativepool:sort:32000000:64:none:240:32m/2
		nativepool:sort:32000000:64:none:240:32m/0
		comet:sort:32000000:64:none:432:32m/2
		comet:sort:32000000:64:none:432:32m/0
		nativepool:sort:32000000:256:none:240:160m/2
		nativepool:sort:32000000:256:none:240:160m/0
		comet:sort:32000000:256:none:576:160m/2
		comet:sort:32000000:256:none:576:160m/0
	)
fi

# command SYSTEM JOB ROWS OFFHEAP: the command line of one run (the JVM is the cgroup's only
# heavy process: builds happen before, outside the cgroup).
command_for() {
	local sys=$1 job=$2 rows=$3 off=$4 burst=$5 extra=()
	if [[ -n $burst ]]; then
		extra=(--burst "${burst%/*}" --burst-ramp "${burst#*/}" --burst-at 2 --burst-hold 10)
	fi
	case $sys:$job in
	comet:sort) echo bash bench/comet/run.sh --rows "$rows" --budget "${off}m" "${extra[@]}" ;;
	comet+nativepool:sort) echo env NATIVEPOOL_JAR="$plugin_jar" bash bench/comet/run.sh --nativepool guard --rows "$rows" --budget "${off}m" "${extra[@]}" ;;
	spark:sort) echo bash bench/comet/run.sh --engine spark --rows "$rows" --budget "${off}m" "${extra[@]}" ;;
	spark+nativepool:sort) echo env NATIVEPOOL_JAR="$plugin_jar" bash bench/comet/run.sh --engine spark --nativepool guard --rows "$rows" --budget "${off}m" "${extra[@]}" ;;
	comet:idle) echo bash bench/comet/run.sh --rows "$rows" --warmup-rows "$rows" --budget "${off}m" ;;
	nativepool:sort) echo bash examples/spark/run.sh --job sort --rows "$rows" --budget "${off}m" "${extra[@]}" ;;
	nativepool-noguard:sort) echo bash examples/spark/run.sh --job sort --rows "$rows" --budget "${off}m" --guard false "${extra[@]}" ;;
	nativepool:demo) echo bash examples/spark/run.sh --rows "$rows" --budget "${off}m" "${extra[@]}" ;;
	nativepool-noguard:demo) echo bash examples/spark/run.sh --rows "$rows" --budget "${off}m" --guard false "${extra[@]}" ;;
	nativepool:idle) echo bash examples/spark/run.sh --rows "$rows" --warmup "$rows" --budget "${off}m" ;;
	*) echo "bench-container: unknown cell $sys:$job" >&2; return 2 ;;
	esac
}

# The plugin jar the "+nativepool" systems put beside the engine (built here, outside any cgroup).
plugin_jar=
if [[ " ${cells[*]} " == *"+nativepool:"* ]]; then
	make -s jar >/dev/null
	plugin_jar=$(ls "$root"/spark/target/nativepool-spark-spark4.1_2.13-*.jar | grep -v -e sources -e javadoc -e original | head -1)
fi

for cell in "${cells[@]}"; do
	IFS=: read -r sys job rows off glibc start burst <<<"$cell"
	label="$sys-$job-$rows-off${off}m-$glibc"
	[[ -z $burst ]] || label="$label-burst${burst%/*}-ramp${burst#*/}s"
	envs=()
	# DEMO_NMT=off: the cells measure the product, without Native Memory Tracking's own cost.
	if [[ $glibc == mmap ]]; then envs=(env DEMO_NMT=off MALLOC_MMAP_THRESHOLD_=131072); else envs=(env -u MALLOC_MMAP_THRESHOLD_ DEMO_NMT=off); fi
	read -r -a cmd <<<"$(command_for "$sys" "$job" "$rows" "$off" "$burst")"
	# The demo's run.sh builds outside and starts only its JVM in the cgroup (DEMO_CGROUP);
	# Comet's run.sh is only the JVM (its classpath resolved beforehand).
	envopt=()
	[[ $sys == comet* || $sys == spark* ]] || envopt=(--env DEMO_CGROUP)
	echo "bench-container: $label from ${start} MiB" >&2
	bash bench/container/bisect.sh --label "$label" --base $(((heap_mib + off) << 20)) --start "$start" "${envopt[@]}" --logs "$out/logs" -- \
		"${envs[@]}" "${cmd[@]}" | tee -a "$out/runs.txt" | grep '^result' | tee -a "$out/results.txt" || true
done
