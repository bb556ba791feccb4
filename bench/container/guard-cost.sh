#!/usr/bin/env bash
# The pod guard's cost on a job that never gets near its limit: the demo's sort (--job sort) with
# the guard on and off, interleaved PAIRS times, each run in a memory cgroup of LIMIT (default
# 8 GiB, far above what the job needs, so the guard samples at its slowest and never reacts). It
# prints each run's measured job time (report.properties elapsedMs) and the ratio of the medians.
#
#   bash bench/container/guard-cost.sh [PAIRS] [ROWS]     (defaults 5 and 32000000)
#
# Needs root and cgroup v1 (exit 3 without).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
pairs=${1:-5}
rows=${2:-32000000}
limit=${LIMIT:-$((8 << 30))}
out=build/guard-cost
mkdir -p "$out"
: >"$out/runs.txt"
for i in $(seq "$pairs"); do
	for guard in true false; do
		rc=0
		bash bench/container/cgrun.sh --name "np-guard-cost-$$" --limit "$limit" --timeout 900 --env DEMO_CGROUP -- \
			env DEMO_HEAP=1024m DEMO_NMT=off NO_COLOR=1 bash examples/spark/run.sh --job sort --rows "$rows" \
			--budget 64m --guard "$guard" --out "$out/$guard" >"$out/last.txt" 2>&1 || rc=$?
		[[ $rc -eq 3 ]] && { echo "guard-cost: no writable memory cgroup; skipped"; exit 3; }
		ms=$(grep '^elapsedMs=' "$out/$guard/report.properties" | cut -d= -f2)
		echo "run pair=$i guard=$guard exit=$rc elapsed_ms=$ms" | tee -a "$out/runs.txt"
	done
done
python3 - "$out/runs.txt" <<'PY'
import statistics, sys
runs = {"true": [], "false": []}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    if f["exit"] == "0":
        runs[f["guard"]].append(int(f["elapsed_ms"]))
on, off = statistics.median(runs["true"]), statistics.median(runs["false"])
print(f"result guard_on_median_ms={on:.0f} guard_off_median_ms={off:.0f} ratio={on/off:.3f} "
      f"on={runs['true']} off={runs['false']}")
PY
