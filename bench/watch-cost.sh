#!/usr/bin/env bash
# What watching costs a running job: the demo's job (examples/spark/run.sh, local[2]) with the
# plugin's monitoring as shipped (the executor memory ledger, the reporting thread, the gauges) and
# Spark's PrometheusServlet scraped every SCRAPE_SECONDS (the driver UI's /metrics/prometheus and
# /metrics/executors/prometheus, with curl), against spark.nativepool.monitoring=false and no
# scrape. Both sides run the same JVM and Spark settings (UI and metrics servlet on, the demo's own
# samplers off: --sampling off) and differ only in the plugin's key and the scraping. stats_calls
# is the run's processStats0 calls (report.properties processStatsCalls: the plugin's polls and the
# demo's four samplers' readings). The sides
# alternate PAIRS times, the first side swapping every pair (on off, off on, ...), so that load
# landing on the machine falls on both. Each run's job time is report.properties' elapsedMs.
#
# Every JVM stays up a few seconds after its job (--idle), and when its job has ended the script
# reads its CPU time and its threads' (job-threads.txt): the plugin's reporting thread (its ledger
# readings and native stats reads, which run on it) and Spark's UI threads (which serve the scrapes)
# against the whole process's CPU since it started, the warm-up run included. That share of the
# CPU is what watching took from the job on 2 busy cores, a bound on its job time cost that does
# not depend on the job times' noise (job_cpu_s, reporter_cpu_s, ui_cpu_s in runs.txt).
#
# The last pair also keeps each JVM up IDLE_SETTLE + IDLE_SECONDS + 10 after its job (--idle):
# after IDLE_SETTLE seconds of settling (the JIT compiles the job's code for a while after it), the
# JVM's CPU time (utime + stime of /proc/<pid>/stat) over IDLE_SECONDS, scraping
# still on for the monitored side, is the idle executor's cost, as % of one core; the script also
# splits it by thread (idle-threads.txt: the plugin's reporting thread is nativepool-reporter,
# comm-truncated to nativepool-repo; Spark's UI threads serve the scrapes) and prints both sides'.
#
# With SCRAPE_ONLY (a count, default 0), that many more runs follow the pairs with the plugin's
# monitoring off and the scrape loop on (side "scrape"; the last with the idle window): Spark's own
# cost of serving the scrapes, which its UI threads pay whether or not the plugin's gauges are
# among the metrics. The monitored side's UI CPU less this is the plugin's gauges' share of it.
#
#   bash bench/watch-cost.sh [PAIRS] [ROWS]     (defaults 5 and 32000000)
#
# Environment: SCRAPE_SECONDS (5), IDLE_SECONDS (60; 0: no idle window), IDLE_SETTLE (60), DEMO_HEAP, DEMO_NMT (as
# run.sh: 1g, summary). Output: build/watch-cost/runs.txt (one line per run), the runs' logs and
# reports under build/watch-cost/<side>-<pair>/, and a summary line per measure (result ...).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
pairs=${1:-5}
rows=${2:-32000000}
scrape=${SCRAPE_SECONDS:-5}
idle=${IDLE_SECONDS:-60}
settle=${IDLE_SETTLE:-60}
out=build/watch-cost
mkdir -p "$out"
: >"$out/runs.txt"

# Spark's metrics configuration (a file: a '*' in a -D option would meet the shell's globbing).
cat >"$out/metrics.properties" <<'EOF'
*.sink.prometheusServlet.class=org.apache.spark.metrics.sink.PrometheusServlet
*.sink.prometheusServlet.path=/metrics/prometheus
EOF
hz=$(getconf CLK_TCK)

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The demo JVM of a run: the java process whose command line has the run's output directory.
jvm_pid() {
	local dir=$1 pid
	for pid in $(pgrep -f -- "org.nativepool.spark.example.SortDemo .*--out $dir" || true); do
		if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == java ]]; then
			echo "$pid"
			return
		fi
	done
}

# Each thread's CPU ticks and name (utime + stime, comm) of a process, one "tid ticks name" a line.
thread_ticks() {
	local t
	for t in /proc/$1/task/*; do
		echo "${t##*/} $(awk '{print $14 + $15}' "$t/stat" 2>/dev/null || echo 0) $(tr ' ' _ <"$t/comm" 2>/dev/null || echo gone)"
	done
}

# CPU ticks (utime + stime) of a process.
cpu_ticks() {
	awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo -1
}

# The idle window's CPU by thread name (threads of one pool, e.g. SparkUI-31, summed under their
# name without the number), as % of one core, largest first.
top_threads() {
	python3 - "$@" <<'PY'
import collections, re, sys
d, hz, t0, t1 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
def load(f):
    return {l.split()[0]: (int(l.split()[1]), l.split()[2]) for l in open(f)}
a, b = load(d + "/threads0.txt"), load(d + "/threads1.txt")
by = collections.Counter()
for tid, (ticks, name) in b.items():
    by[re.sub(r"[-_]?\d+$", "", name)] += ticks - a.get(tid, (0, name))[0]
for name, ticks in by.most_common():
    if ticks:
        print(f"{name} {ticks / hz / (t1 - t0) * 100:.3f}")
PY
}

# run SIDE PAIR IDLE: one run of the demo; appends its line to runs.txt.
run() {
	local side=$1 pair=$2 idle_s=$3
	local dir=$out/$side-$pair port opts
	rm -rf "$dir"
	mkdir -p "$dir"
	port=$(free_port)
	opts="-Dspark.ui.enabled=true -Dspark.ui.port=$port -Dspark.port.maxRetries=0"
	opts+=" -Dspark.ui.prometheus.enabled=true -Dspark.metrics.conf=$root/$out/metrics.properties"
	[[ $side == off || $side == scrape ]] && opts+=" -Dspark.nativepool.monitoring=false"
	local idle_args=(--idle 3)
	((idle_s > 0)) && idle_args=(--idle $((settle + idle_s + 10)))
	DEMO_JAVA_OPTS="$opts" NO_COLOR=1 bash examples/spark/run.sh --rows "$rows" --sampling off \
		--out "$root/$dir" "${idle_args[@]}" >"$dir/log.txt" 2>&1 &
	local demo=$!
	local scrapes=0 scrape_ms=0 idle_pct=-1 t0 t1 c0 c1 pid=""
	local next=$SECONDS idle_at=-1 job_end=""
	while kill -0 "$demo" 2>/dev/null; do
		if [[ $side != off ]] && ((SECONDS >= next)); then
			next=$((SECONDS + scrape))
			local t
			for path in /metrics/prometheus /metrics/executors/prometheus; do
				if t=$(curl -sL -o "$dir/last-scrape${path//\//_}.txt" -w '%{http_code} %{time_total}' "http://127.0.0.1:$port$path"); then
					if [[ ${t%% *} == 200 ]]; then
						scrapes=$((scrapes + 1))
						scrape_ms=$(python3 -c "print($scrape_ms + ${t#* } * 1000)")
					fi
				fi
			done
		fi
		if [[ -z $job_end ]] && grep -q '^sortdemo: idle for' "$dir/log.txt"; then
			job_end=$(jvm_pid "$root/$dir")
			if [[ -n $job_end ]]; then
				echo "process $(cpu_ticks "$job_end")" >"$dir/job-threads.txt"
				thread_ticks "$job_end" >>"$dir/job-threads.txt"
			else
				job_end=none
			fi
			((idle_s > 0)) && idle_at=$((SECONDS + settle))
		fi
		if ((idle_at >= 0)) && ((SECONDS >= idle_at)) && [[ -z $pid ]]; then
			pid=$(jvm_pid "$root/$dir")
			if [[ -n $pid ]]; then
				c0=$(cpu_ticks "$pid")
				thread_ticks "$pid" >"$dir/threads0.txt"
				t0=$(date +%s.%N)
			else
				pid=none
			fi
		fi
		if [[ -n $pid && $pid != none ]] && [[ -z ${t1:-} ]] &&
			(($(python3 -c "print(int($(date +%s.%N) - $t0 >= $idle_s))"))); then
			c1=$(cpu_ticks "$pid")
			thread_ticks "$pid" >"$dir/threads1.txt"
			t1=$(date +%s.%N)
			if ((c0 >= 0 && c1 >= 0)); then
				idle_pct=$(python3 -c "print(f'{($c1 - $c0) / $hz / ($t1 - $t0) * 100:.3f}')")
				top_threads "$dir" "$hz" "$t0" "$t1" >"$dir/idle-threads.txt"
			fi
		fi
		sleep 0.2
	done
	local rc=0
	wait "$demo" || rc=$?
	local ms calls
	ms=$(grep '^elapsedMs=' "$dir/report.properties" 2>/dev/null | cut -d= -f2 || true)
	calls=$(grep '^processStatsCalls=' "$dir/report.properties" 2>/dev/null | cut -d= -f2 || true)
	local job_cpu="job_cpu_s=-1 reporter_cpu_s=-1 ui_cpu_s=-1"
	if [[ -s $dir/job-threads.txt ]]; then
		job_cpu=$(awk -v hz="$hz" '
			$1 == "process" { p = $2; next }
			$3 ~ /^nativepool-repo/ { r += $2 }
			$3 ~ /^SparkUI/ { u += $2 }
			END { printf "job_cpu_s=%.2f reporter_cpu_s=%.3f ui_cpu_s=%.3f", p / hz, r / hz, u / hz }' "$dir/job-threads.txt")
	fi
	echo "run pair=$pair side=$side exit=$rc elapsed_ms=${ms:--1} stats_calls=${calls:--1} scrapes=$scrapes scrape_ms_total=$scrape_ms idle_cpu_pct=$idle_pct $job_cpu" |
		tee -a "$out/runs.txt"
}

echo "watch-cost: $pairs pairs of $rows rows; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$pairs"); do
	idle_s=0
	((i == pairs)) && idle_s=$idle
	if ((i % 2 == 1)); then
		run on "$i" "$idle_s"
		run off "$i" "$idle_s"
	else
		run off "$i" "$idle_s"
		run on "$i" "$idle_s"
	fi
done
for i in $(seq "${SCRAPE_ONLY:-0}"); do
	idle_s=0
	((i == SCRAPE_ONLY)) && idle_s=$idle
	run scrape "$i" "$idle_s"
done
echo "watch-cost: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out/runs.txt" "$out" <<'PY'
import statistics, sys
runs = {"on": [], "off": [], "scrape": []}
idle = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    if f["exit"] == "0" and int(f["elapsed_ms"]) > 0:
        runs[f["side"]].append(int(f["elapsed_ms"]))
    if float(f["idle_cpu_pct"]) >= 0:
        idle[f["side"]] = float(f["idle_cpu_pct"])
med = {k: statistics.median(v) if v else -1 for k, v in runs.items()}
on, off = med["on"], med["off"]
shares = {"on": [], "reporter": [], "ui": [], "scrape": []}
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    cpu = float(f.get("job_cpu_s", -1))
    if cpu <= 0 or f["side"] == "off":
        continue
    rep, ui = float(f["reporter_cpu_s"]) / cpu * 100, float(f["ui_cpu_s"]) / cpu * 100
    if f["side"] == "on":
        shares["on"].append(rep + ui)
        shares["reporter"].append(rep)
        shares["ui"].append(ui)
    else:
        shares["scrape"].append(ui)
for k, v in shares.items():
    if v:
        print(f"result job_cpu_share_pct {k} median={statistics.median(v):.3f} "
              f"min={min(v):.3f} max={max(v):.3f} runs={[round(x, 3) for x in v]}")
print(f"result job_time on_median_ms={on:.0f} off_median_ms={off:.0f} ratio={on/off if off > 0 else -1:.4f} "
      f"on={runs['on']} off={runs['off']} scrape={runs['scrape']}")
for side in ("on", "off"):
    for line in open(sys.argv[1]):
        f = dict(kv.split("=") for kv in line.split()[1:])
        if f["side"] == side and float(f["idle_cpu_pct"]) >= 0:
            d = sys.argv[2] + "/" + side + "-" + f["pair"] + "/idle-threads.txt"
            top = [l.split() for l in open(d)][:8]
            print(f"idle threads {side}: " + ", ".join(f"{n} {p}%" for n, p in top))
if idle:
    print(f"result idle_cpu_pct_of_one_core on={idle.get('on', -1):.3f} off={idle.get('off', -1):.3f} "
          f"difference={idle.get('on', 0) - idle.get('off', 0):.3f}")
PY
