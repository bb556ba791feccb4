#!/usr/bin/env bash
# What the heap holders cost the demo's job: examples/spark/run.sh (local[2], ROWS rows) with the
# plugin's recording of Old Object Samples on (spark.nativepool.heapHolders.enabled=true, the
# default) against off (=false), the sides alternating PAIRS times, the first side swapping every
# pair (on off, off on, ...), as bench/watch-cost.sh does, so that load landing on the machine falls
# on both. Each run's job time is report.properties' elapsedMs, and its JVM's CPU time (utime +
# stime, warm-up run and start included) is read when its job ends.
#
# The last "on" run stays up after its job (--idle) and is asked for one analysis of its heap the
# way an operator would, through JFR's own dump of the plugin's recording with the path search
# unbounded (jcmd JFR.dump name="nativepool heap holders" path-to-gc-roots=true): its wall time, and
# the longest safepoint pause the JVM logged meanwhile (-Xlog:safepoint), on the demo's heap.
#
#   bash bench/heap-holders/cost.sh [PAIRS] [ROWS]     (defaults 5 and 32000000)
#
# Output: build/heap-holders-cost/runs.txt (one line per run), the runs' logs under
# build/heap-holders-cost/<side>-<pair>/, and the summary lines (result ...).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
pairs=${1:-5}
rows=${2:-32000000}
out=build/heap-holders-cost
mkdir -p "$out"
: >"$out/runs.txt"
JAVA_HOME=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}

# The demo JVM of a run: the java process whose command line has the run's output directory.
jvm_pid() {
	local pid
	for pid in $(pgrep -f -- "org.nativepool.spark.example.SortDemo .*--out $1" || true); do
		if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == java ]]; then
			echo "$pid"
			return
		fi
	done
}

run() { # run SIDE PAIR DUMP: one run of the demo; appends its line to runs.txt
	local side=$1 pair=$2 dump=$3
	local dir=$out/$side-$pair
	rm -rf "$dir"
	mkdir -p "$dir"
	local opts="-Dspark.nativepool.heapHolders.enabled=$([[ $side == on ]] && echo true || echo false)"
	local idle=(--idle 1)
	if ((dump)); then
		opts+=" -Xlog:safepoint:file=$root/$dir/safepoint.log:uptime"
		idle=(--idle 60)
	fi
	DEMO_JAVA_OPTS="$opts" NO_COLOR=1 bash examples/spark/run.sh --rows "$rows" --sampling off \
		--out "$root/$dir" "${idle[@]}" >"$dir/log.txt" 2>&1 &
	local demo=$! dump_ms=-1 pause_ms=-1 cpu_s=-1
	until grep -q '^sortdemo: idle for' "$dir/log.txt" 2>/dev/null || ! kill -0 "$demo" 2>/dev/null; do sleep 0.2; done
	local pid
	pid=$(jvm_pid "$root/$dir")
	if [[ -n $pid ]]; then
		# the JVM's CPU time when its job ended (utime + stime): the load moves it less than wall time
		cpu_s=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$pid/stat" 2>/dev/null || echo -1)
	fi
	if ((dump)); then
		if [[ -n $pid ]]; then
			sleep 5
			local before t0 t1
			before=$(wc -l <"$dir/safepoint.log")
			t0=$(date +%s%N)
			"$JAVA_HOME/bin/jcmd" "$pid" JFR.dump 'name="nativepool heap holders"' path-to-gc-roots=true \
				filename="$root/$dir/holders.jfr" >"$dir/jcmd.txt" 2>&1 || true
			t1=$(date +%s%N)
			dump_ms=$(((t1 - t0) / 1000000))
			# the longest pause logged since the dump began: "Total: N ns"
			pause_ms=$(tail -n +"$((before + 1))" "$dir/safepoint.log" |
				sed -n 's/.*Total: \([0-9]*\) ns.*/\1/p' | sort -n | tail -1 | awk '{printf "%d", $1 / 1000000}')
			pause_ms=${pause_ms:--1}
			ls -l "$dir/holders.jfr" >>"$dir/jcmd.txt" 2>&1 || true
			rm -f "$dir/holders.jfr"
		fi
	fi
	local rc=0
	wait "$demo" || rc=$?
	local ms
	ms=$(grep '^elapsedMs=' "$dir/report.properties" 2>/dev/null | cut -d= -f2 || true)
	echo "run pair=$pair side=$side exit=$rc elapsed_ms=${ms:--1} cpu_s=$cpu_s dump_ms=$dump_ms pause_ms=$pause_ms" |
		tee -a "$out/runs.txt"
}

echo "heap-holders-cost: $pairs pairs of $rows rows; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$pairs"); do
	last=$((i == pairs ? 1 : 0))
	if ((i % 2 == 1)); then
		run on "$i" "$last"
		run off "$i" 0
	else
		run off "$i" 0
		run on "$i" "$last"
	fi
done
echo "heap-holders-cost: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out/runs.txt" <<'PY'
import statistics, sys
runs = {"on": [], "off": []}
cpu = {"on": [], "off": []}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    if f["exit"] == "0" and int(f["elapsed_ms"]) > 0:
        runs[f["side"]].append(int(f["elapsed_ms"]))
        if float(f.get("cpu_s", -1)) > 0:
            cpu[f["side"]].append(float(f["cpu_s"]))
    if int(f["dump_ms"]) >= 0:
        print(f"result dump on the demo's heap: wall {f['dump_ms']} ms (jcmd included), longest safepoint pause {f['pause_ms']} ms")
for side in ("on", "off"):
    v = runs[side]
    print(f"result {side}: {len(v)} runs, job ms {sorted(v)}, median {statistics.median(v) if v else -1}")
if runs["on"] and runs["off"]:
    on, off = statistics.median(runs["on"]), statistics.median(runs["off"])
    print(f"result on - off: {on - off:+.0f} ms of the median job, {100 * (on - off) / off:+.2f}%")
for side in ("on", "off"):
    v = cpu[side]
    print(f"result {side}: JVM CPU at the job's end, s {sorted(v)}, median {statistics.median(v) if v else -1}")
if cpu["on"] and cpu["off"]:
    on, off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
    print(f"result on - off: {on - off:+.1f} s of the median JVM CPU, {100 * (on - off) / off:+.2f}%")
PY
