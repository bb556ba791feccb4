#!/usr/bin/env bash
# `make bench-container`: each system's smallest surviving memoryOverhead under a memory cgroup
# sized like a Kubernetes executor pod (limit = heap + off-heap + overhead), bisected in 16 MiB
# steps by bench/container/bisect.sh, on the same job for both systems:
#
#   sort      a sort of N rows with the whole off-heap budget usable by the native sort:
#             Comet 1.2's (bench/comet, fair_unified). nativepool's side needs a sort-only job in
#             the demo (no Spark aggregation), which it does not have yet: no nativepool:sort cell.
#   demo      nativepool's full demo, with its Spark aggregation
#   idle      the idle-JVM baseline: the same JVM and Spark session running a 1-row job
#
#   bash bench/container/run.sh [CELL ...]      (no argument: every cell below)
#
# A cell is SYSTEM:JOB:ROWS:OFFHEAP:GLIBC:START, GLIBC "mmap" (MALLOC_MMAP_THRESHOLD_=131072 in
# the environment) or "none", START the first overhead tried in MiB (near the expected answer).
# Results: one `result …` line per cell on stdout and in build/bench-container/results.txt, every
# run's line in runs.txt. Needs root and cgroup v1 (exit 3 without).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=build/bench-container
mkdir -p "$out"
heap_mib=1024

cells=("$@")
if [[ ${#cells[@]} -eq 0 ]]; then
	cells=(
		idle:idle:1:64:none:256
		comet:idle:1:64:none:256
		comet:sort:32000000:64:mmap:368
		comet:sort:32000000:64:none:432
		comet:sort:32000000:256:mmap:400
		comet:sort:32000000:256:none:448
		comet:sort:128000000:64:none:576
		nativepool:demo:32000000:64:none:272
		nativepool:demo:128000000:64:none:272
	)
fi

# command SYSTEM JOB ROWS OFFHEAP: the command line of one run (the JVM is the cgroup's only
# heavy process: builds happen before, outside the cgroup).
command_for() {
	local sys=$1 job=$2 rows=$3 off=$4
	case $sys:$job in
	comet:sort) echo bash bench/comet/run.sh --rows "$rows" --budget "${off}m" ;;
	comet:idle) echo bash bench/comet/run.sh --rows 2 --warmup-rows 2 --budget "${off}m" ;;
	nativepool:demo) echo bash examples/spark/run.sh --rows "$rows" --budget "${off}m" ;;
	idle:idle) echo bash examples/spark/run.sh --rows 2 --warmup 2 --budget "${off}m" ;;
	*) echo "bench-container: unknown cell $sys:$job" >&2; return 2 ;;
	esac
}

for cell in "${cells[@]}"; do
	IFS=: read -r sys job rows off glibc start <<<"$cell"
	label="$sys-$job-$rows-off${off}m-$glibc"
	envs=()
	if [[ $glibc == mmap ]]; then envs=(env MALLOC_MMAP_THRESHOLD_=131072); else envs=(env -u MALLOC_MMAP_THRESHOLD_); fi
	read -r -a cmd <<<"$(command_for "$sys" "$job" "$rows" "$off")"
	# The demo's run.sh builds outside and starts only its JVM in the cgroup (DEMO_CGROUP);
	# Comet's run.sh is only the JVM (its classpath resolved beforehand).
	envopt=()
	[[ $sys == comet ]] || envopt=(--env DEMO_CGROUP)
	echo "bench-container: $label from ${start} MiB" >&2
	bash bench/container/bisect.sh --label "$label" --base $(((heap_mib + off) << 20)) --start "$start" "${envopt[@]}" -- \
		"${envs[@]}" "${cmd[@]}" | tee -a "$out/runs.txt" | grep '^result' | tee -a "$out/results.txt" || true
done
