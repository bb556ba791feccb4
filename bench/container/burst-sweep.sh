#!/usr/bin/env bash
# The largest instant burst the pod guard survives at a given reserve: the demo's sort (32M rows,
# 64 MiB off-heap, 1 GiB heap) in a memory cgroup at the sort's survival point without a burst
# (OVERHEAD MiB, default 240), with a burst of direct buffers taken at once (--burst-ramp 0) 2 s
# into the job, for each RESERVE and each SIZE. One run per cell; prints one line per run.
#
#   bash bench/container/burst-sweep.sh ["32m 64m"] ["16m 32m 48m 64m 96m"]
#
# Needs root and cgroup v1 (exit 3 without).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
reserves=${1:-32m 64m}
sizes=${2:-16m 32m 48m 64m 96m}
overhead=${OVERHEAD:-240}
limit=$(((1024 + 64 + overhead) << 20))
out=build/burst-sweep
mkdir -p "$out"
for reserve in $reserves; do
	for size in $sizes; do
		rc=0
		bash bench/container/cgrun.sh --name "np-sweep-$$" --limit "$limit" --timeout 900 --env DEMO_CGROUP -- \
			env DEMO_HEAP=1024m DEMO_NMT=off NO_COLOR=1 DEMO_JAVA_OPTS="-Dspark.nativepool.guard.reserve=$reserve" \
			bash examples/spark/run.sh --job sort --rows 32000000 --budget 64m --burst "$size" --burst-ramp 0 \
			--burst-at 2 --burst-hold 10 --out "$out/run" >"$out/last.txt" 2>&1 || rc=$?
		[[ $rc -eq 3 ]] && { echo "burst-sweep: no writable memory cgroup; skipped"; exit 3; }
		p=$out/run/report.properties
		get() { [[ -s $p && $rc -eq 0 ]] && grep "^$1=" "$p" | cut -d= -f2 || echo -; }
		echo "run overhead_mib=$overhead reserve=$reserve burst=$size exit=$rc episodes=$(get guard.episodes)" \
			"spilled=$(get guard.spilled) reaction_us_max=$(get guard.reactionMicrosMax) elapsed_ms=$(get elapsedMs)" \
			"$(grep -E '^(peak|oom_kills|seconds)=' "$out/last.txt" | tr '\n' ' ')" | tee -a "$out/runs.txt"
		rm -rf "$out/run"
	done
done
