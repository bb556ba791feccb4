#!/usr/bin/env bash
# The pod guard's cost on a job that never gets near its limit, on and off, interleaved PAIRS
# times (the arm that runs first alternating from pair to pair), each run in a memory cgroup of
# LIMIT (default 8 GiB, far above what the job needs, so the guard samples at its slowest and
# never reacts). It prints each run's measured job time and the
# ratio of the medians (on ÷ off).
#
#   bash bench/container/guard-cost.sh [PAIRS] [ROWS] [SYSTEM]     (defaults 5, 32000000, sort)
#
# SYSTEM, and what "on" and "off" mean for it:
#   sort    the demo's native sort alone (--job sort): --guard true against --guard false
#   demo    the full demo (the sort beside Spark's aggregation): --guard true against false
#   spark   a plain Spark off-heap sort (bench/comet, --engine spark) with nativepool's plugin
#           beside it as the guard, against the same job without the plugin
#   comet   Comet 1.2.0's sort (bench/comet) with nativepool's plugin beside it, against Comet
#           alone
# Job time: the demo's report.properties elapsedMs; CometSortBench's RESULT elapsed_s.
#
# For spark and comet, to split the plugin's cost into its parts (environment):
#   OFF=noguard     "off" is the plugin with its guard off (spark.nativepool.guard.enabled=false)
#                   instead of no plugin: on ÷ off is then the guard's own cost
#   ON_CONF="k=v …" Spark settings for the "on" runs (and for OFF=noguard's), e.g.
#                   ON_CONF=spark.nativepool.heapHolders.enabled=false
#
# Needs root and cgroup v1 (exit 3 without).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
pairs=${1:-5}
rows=${2:-32000000}
system=${3:-sort}
OFF=${OFF:-none}
limit=${LIMIT:-$((8 << 30))}
out=build/guard-cost/$system
mkdir -p "$out"
: >"$out/runs.txt"
plugin_jar=
case $OFF in none | noguard) ;; *) echo "guard-cost: OFF=$OFF: none or noguard" >&2; exit 2 ;; esac
case $system in
sort | demo) ;;
spark | comet)
	make -s jar >/dev/null
	plugin_jar=$(ls "$root"/spark/target/nativepool-spark-spark4.1_2.13-*.jar | grep -v -e sources -e javadoc -e original | head -1)
	;;
*) echo "guard-cost: unknown system $system (sort, demo, spark or comet)" >&2; exit 2 ;;
esac
for i in $(seq "$pairs"); do
	# Alternate which arm runs first (on-off, off-on, ...): the first run of a pair meets other
	# caches and page-cache state than the second, which a fixed order would charge to one arm.
	order="true false"
	((i % 2 == 0)) && order="false true"
	for guard in $order; do
		rc=0
		case $system in
		sort | demo)
			bash bench/container/cgrun.sh --name "np-guard-cost-$$" --limit "$limit" --timeout 900 --env DEMO_CGROUP -- \
				env DEMO_HEAP=1024m DEMO_NMT=off NO_COLOR=1 bash examples/spark/run.sh --job "$system" --rows "$rows" \
				--budget 64m --guard "$guard" --out "$out/$guard" >"$out/last.txt" 2>&1 || rc=$?
			ms=$(grep '^elapsedMs=' "$out/$guard/report.properties" 2>/dev/null | cut -d= -f2)
			;;
		spark | comet)
			np=$OFF
			[[ $guard == true ]] && np=guard
			confs=()
			if [[ $np != none ]]; then
				for kv in ${ON_CONF:-}; do confs+=(--conf "$kv"); done
			fi
			mkdir -p "$out/$guard"
			bash bench/container/cgrun.sh --name "np-guard-cost-$$" --limit "$limit" --timeout 900 -- \
				env HEAP=1024m NATIVEPOOL_JAR="$plugin_jar" TMPDIR="$root/$out/$guard" bash bench/comet/run.sh \
				--engine "$system" --nativepool "$np" --rows "$rows" --budget 64m "${confs[@]}" >"$out/last.txt" 2>&1 || rc=$?
			s=$(grep -o 'RESULT .*elapsed_s=[0-9.]*' "$out/last.txt" | tail -1 | sed 's/.*elapsed_s=//')
			ms=$(python3 -c "print(int(float('${s:-0}') * 1000))")
			;;
		esac
		[[ $rc -eq 3 ]] && { echo "guard-cost: no writable memory cgroup; skipped"; exit 3; }
		echo "run system=$system pair=$i guard=$guard exit=$rc elapsed_ms=${ms:-0}" | tee -a "$out/runs.txt"
	done
done
python3 - "$out/runs.txt" "$OFF" "${ON_CONF:-}" <<'PY'
import statistics, sys
runs = {"true": [], "false": []}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    if f["exit"] == "0":
        runs[f["guard"]].append(int(f["elapsed_ms"]))
on, off = statistics.median(runs["true"]), statistics.median(runs["false"])
print(f"result system={f['system']} off={sys.argv[2]} on_conf={sys.argv[3] or 'none'} guard_on_median_ms={on:.0f} guard_off_median_ms={off:.0f} "
      f"ratio={on/off:.3f} on={runs['true']} off={runs['false']}")
PY
