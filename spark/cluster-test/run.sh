#!/usr/bin/env bash
# make test-cluster: a real standalone Spark cluster on 127.0.0.1 (a Master and one Worker in their
# own JVMs, executors started by the Worker), and jobs submitted with only the plugin jar: no
# --files, no library path, no other jar but the application's own.
#
#   bash spark/cluster-test/run.sh            (the Makefile builds the plugin jar first: make jar)
#   LINE=spark3.5_2.12 bash spark/cluster-test/run.sh    (make test-cluster SPARK=3.5 SCALA=2.12)
#
# LINE is the Spark line whose plugin jar is tested (default spark4.1_2.13; see the root pom.xml):
# the jar spark/target[/<line>]/nativepool-spark-<line>-*.jar. The Spark release and Scala version
# come from the jar's stamp (org/nativepool/native/version.properties), and the cluster runs that
# Spark, as a user of that line deploys it (common.sh, spark_home): spark-core and spark-sql of that
# release and Scala with their runtime dependencies (spark-home.xml, with the line's profile),
# copied from Maven's local repository into build/spark-home/<line>/jars, or, for Spark 4.3, the
# release's own jars/ as PyPI ships them (spark/dist/pyspark-home.sh). The JVMs are started with
# `java -cp "$SPARK_HOME/jars/*"`: the same classes and arguments bin/spark-class and
# bin/spark-submit would run.
#
# Runs, on one cluster:
#   main          the application (ClusterJob) on 2 executors: every task opens a native pool,
#                 moves an Arrow batch through Go and back, and is made to spill by Spark;
#   broken-driver spark.nativepool.library=/nonexistent/...: the driver's check fails the
#                 application at SparkContext start, no executor is launched;
#   broken-exec   -Dnativepool.library=/nonexistent/... in the executors only: each executor
#                 disables native pools, every task fails with the message, the job fails after
#                 Spark's retries, and no executor is lost or relaunched;
#   wrong-line-driver  a plugin jar built for another Spark line (the default line's jar when
#                 this is another line and it is built, else this jar with another line's stamp):
#                 the driver fails the application at SparkContext start, naming both lines;
#   wrong-line-exec    the same jar ahead on the executors' classpath only: every task fails with
#                 that message, no executor is lost, no NoClassDefFoundError anywhere.
# Then named checks (check_* below), each printing PASS or FAIL. Every check can read:
#   RUN            this run's directory (build/cluster-test/<timestamp>)
#   APP_ID         the main application's id; MAIN_OUT / MAIN_ERR its driver's stdout / stderr
#   DRIVER_UI      the main driver's UI port (live while the live checks run)
#   MASTER_UI, WORKER_UI  the Master's and the Worker's UI ports
#   WORK           the Worker's work dir: $WORK/<app id>/<executor id>/stderr is an executor's log
#   exec_stderrs   prints the main application's executor stderr paths
# Checks that need the main driver alive go in LIVE_CHECKS (run while it waits, before it stops);
# the others in CHECKS.
#
# Everything it starts is stopped by PID on exit, failure included. Prints how long it took.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=spark/cluster-test/common.sh
. "$root/spark/cluster-test/common.sh"
say() { echo "test-cluster: $*"; }
cd "$root"
start_s=$(date +%s)


DEFAULT_LINE=spark4.1_2.13
LINE=${LINE:-$DEFAULT_LINE}
plugin_jars() { # plugin_jars <line>: the built jar of that line, if any
	plugin_jar_of "$1"
}
plugin_jar=$(plugin_jars "$LINE")
if [[ -z $plugin_jar ]]; then
	echo "test-cluster: no nativepool-spark-$LINE-*.jar under spark/target; run make jar (SPARK=, SCALA=)" >&2
	exit 2
fi
spark_line=$(stamp_of "$plugin_jar" spark.line)
spark_version=$(stamp_of "$plugin_jar" spark.version)
scala_version=$(stamp_of "$plugin_jar" scala.binary.version)
if [[ spark${spark_line}_$scala_version != "$LINE" ]]; then
	echo "test-cluster: $plugin_jar is stamped spark${spark_line}_$scala_version, not $LINE" >&2
	exit 2
fi
echo "test-cluster: $LINE: $plugin_jar on Spark $spark_version, Scala $scala_version"

# ---- SPARK_HOME: the line's Spark (common.sh, spark_home) ----
spark_home "$LINE" "$spark_version" "$scala_version"
if ls "$SPARK_HOME"/jars/arrow-c-data-*.jar >/dev/null 2>&1; then
	echo "test-cluster: $SPARK_HOME/jars has arrow-c-data; the test needs Spark's jars only" >&2
	exit 2
fi
for want in "spark-core_$scala_version-$spark_version.jar" "scala-library-$scala_version."; do
	found=("$SPARK_HOME"/jars/"$want"*) # a glob: `ls | grep -q` fails under pipefail when ls gets SIGPIPE
	[[ -e ${found[0]} ]] || { echo "test-cluster: no $want* in $SPARK_HOME/jars" >&2; exit 2; }
done
# WorkerCommandBuilder asks for the Scala version when it cannot infer it from a build tree.
export SPARK_SCALA_VERSION=$scala_version
export SPARK_LOCAL_IP=127.0.0.1
spark_cp="$SPARK_HOME/jars/*"
jvm_args=("@$root/spark/spark-jvm.args")

RUN=$root/build/cluster-test/$(date +%Y%m%d-%H%M%S)-$$
WORK=$RUN/work
mkdir -p "$RUN" "$WORK"
echo "test-cluster: run directory $RUN"

# ---- the application jar (its own jar; compiled against Spark's jars and the plugin jar) ----
app_jar=$RUN/nativepool-cluster-job.jar
mkdir -p "$RUN/classes"
# -path: a release's jars/ (Spark 4.3's from PyPI) has derby, whose manifest names jars it lacks
"$JAVA_HOME/bin/javac" -Xlint:all,-path -Werror -proc:none --release 17 -d "$RUN/classes" \
	-cp "$spark_cp:$plugin_jar" spark/cluster-test/src/org/nativepool/spark/clustertest/*.java
"$JAVA_HOME/bin/jar" --create --file "$app_jar" -C "$RUN/classes" .

# ---- a plugin jar of another Spark line: the default line's when this is another line and it is
# built (a real jar of another line, its own bundled Arrow), else this jar with another line's stamp
# (what such a jar says it is built for) ----
if [[ $LINE != "$DEFAULT_LINE" && -n $(plugin_jars "$DEFAULT_LINE") ]]; then
	wrong_jar=$(plugin_jars "$DEFAULT_LINE")
	echo "test-cluster: another line's jar: $wrong_jar"
else
	if [[ $spark_line == 3.5 ]]; then other=(4.1 2.13 4.1.3 18.3.0); else other=(3.5 2.12 3.5.9 12.0.1); fi
	wrong_jar=$RUN/nativepool-spark-spark${other[0]}_${other[1]}-restamped.jar
	python3 - "$plugin_jar" "$wrong_jar" "${other[@]}" <<'PY'
import sys, zipfile
src, dst, line, scala, spark, arrow = sys.argv[1:]
name = "org/nativepool/native/version.properties"
new = {"spark.line": line, "scala.binary.version": scala, "spark.version": spark, "arrow.version": arrow}
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
    for item in zin.infolist():
        data = zin.read(item)
        if item.filename == name:
            lines = [l.split("=", 1)[0] + "=" + new[l.split("=", 1)[0]] if l.split("=", 1)[0] in new else l
                     for l in data.decode().splitlines()]
            data = ("\n".join(lines) + "\n").encode()
        zout.writestr(item, data)
PY
	echo "test-cluster: another line's jar: $wrong_jar (this jar, stamped Spark ${other[0]}, Scala ${other[1]})"
fi
wrong_line=spark$(stamp_of "$wrong_jar" spark.line)_$(stamp_of "$wrong_jar" scala.binary.version)
# the message both wrong-line checks look for (SparkLine.mismatch)
WRONG_LINE_MSG="nativepool: this plugin jar, nativepool-spark-$wrong_line, is built for Spark $(stamp_of "$wrong_jar" spark.line) with Scala $(stamp_of "$wrong_jar" scala.binary.version) ($(stamp_of "$wrong_jar" spark.version), Arrow $(stamp_of "$wrong_jar" arrow.version)), and cannot run on Spark $spark_version with Scala $scala_version."
WRONG_LINE_DEPLOY="deploy nativepool-spark-$LINE instead"

# ---- free ports (not Spark's defaults, so parallel runs do not collide) ----
read -r MASTER_PORT MASTER_UI WORKER_PORT WORKER_UI DRIVER_UI <<<"$(python3 -c '
import socket
ss = [socket.socket() for _ in range(5)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))
for s in ss: s.close()')"
MASTER_URL=spark://127.0.0.1:$MASTER_PORT

# ---- everything started is stopped by PID, on any exit ----
pids=()
stop_all() {
	local p c
	for p in "${pids[@]}"; do
		# executors and drivers are descendants of what we started: stop them first
		for c in $(descendants "$p"); do kill "$c" 2>/dev/null || true; done
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	done
	echo "test-cluster: took $(($(date +%s) - start_s)) s"
}
trap stop_all EXIT
trap "exit 130" INT TERM


"$JAVA" "${jvm_args[@]}" -Xmx256m -cp "$spark_cp" org.apache.spark.deploy.master.Master \
	--host 127.0.0.1 --port "$MASTER_PORT" --webui-port "$MASTER_UI" >"$RUN/master.log" 2>&1 &
pids+=($!)
wait_for 120 "$RUN/master.log" "I have been elected leader" "${pids[-1]}"
"$JAVA" "${jvm_args[@]}" -Xmx256m -cp "$spark_cp" org.apache.spark.deploy.worker.Worker \
	--host 127.0.0.1 --port "$WORKER_PORT" --webui-port "$WORKER_UI" --cores 2 --memory 3g \
	--work-dir "$WORK" "$MASTER_URL" >"$RUN/worker.log" 2>&1 &
pids+=($!)
wait_for 120 "$RUN/worker.log" "Successfully registered with master" "${pids[-1]}"
echo "test-cluster: master $MASTER_URL (UI $MASTER_UI), worker UI $WORKER_UI"

# The README's spark-submit line (its "Deploy"; docs/DEPLOYING.md gives the same, DocsExamplesTest
# keeps them equal), run as written but for the master's address, the plugin jar (submit adds the
# jar it tests) and the application (each submit names its own), plus the test's own settings:
# its driver's address, and Spark's leak check throwing.
mapfile -t readme_args < <(python3 - "$root/README.md" <<'PY'
import re, shlex, sys
text = open(sys.argv[1], encoding="utf-8").read()
mark = "<!-- spark-submit: run by spark/cluster-test/run.sh -->"
m = re.compile(r"```[a-z]*\n(.*?)```", re.S).search(text, text.index(mark))
args = shlex.split(m.group(1).replace("\\\n", " "))
assert args[0] == "spark-submit" and args[-3:] == ["--class", "your.App", "your-app.jar"], args
out, i = [], 1
while i < len(args) - 3:
    if args[i] == "--jars":
        i += 2  # submit adds the jar under test
        continue
    out.append(args[i].replace("spark://MASTER-HOST:7077", "MASTER_URL"))
    i += 1
print("\n".join(out))
PY
)
((${#readme_args[@]} > 10)) || { echo "test-cluster: no spark-submit line in README.md" >&2; exit 2; }
submit_conf=()
for a in "${readme_args[@]}"; do submit_conf+=("${a/MASTER_URL/$MASTER_URL}"); done
submit_conf+=(
	--conf spark.driver.host=127.0.0.1
	--conf spark.driver.bindAddress=127.0.0.1
	--conf spark.unsafe.exceptionOnMemoryLeak=true
)
echo "test-cluster: the README's spark-submit arguments: ${readme_args[*]}"
submit() { # submit <name> <timeout s> <extra args...>: driver output in $RUN/<name>.{out,err};
	# the plugin jar is $plugin_jar, or $jars when set
	local name=$1 limit=$2
	shift 2
	timeout --kill-after=10 "$limit" "$JAVA" "${jvm_args[@]}" -Xmx512m -cp "$spark_cp" \
		org.apache.spark.deploy.SparkSubmit "${submit_conf[@]}" --jars "${jars:-$plugin_jar}" "$@" \
		>"$RUN/$name.out" 2>"$RUN/$name.err"
}

# ---- broken library, visible to the driver: started now, beside the main job (it fails before
# asking for executors) ----
bad=/nonexistent/nativepool/libnativepool.so
broken_driver_t0=$(date +%s)
(
	rc=0
	submit broken-driver 150 --conf spark.ui.enabled=false --conf spark.nativepool.library="$bad" \
		--class org.nativepool.spark.clustertest.ClusterJob "$app_jar" 2 || rc=$?
	echo "$rc $(($(date +%s) - broken_driver_t0))" >"$RUN/broken-driver.rc"
) &
broken_driver_pid=$!
pids+=($broken_driver_pid)

# ---- a jar of another Spark line, visible to the driver: fails before asking for executors ----
(
	rc=0
	jars=$wrong_jar submit wrong-line-driver 150 --conf spark.ui.enabled=false \
		--class org.nativepool.spark.clustertest.ClusterJob "$app_jar" 2 || rc=$?
	echo "$rc" >"$RUN/wrong-line-driver.rc"
) &
wrong_driver_pid=$!
pids+=($wrong_driver_pid)

# ---- the main job: live until the live checks have run ----
MAIN_OUT=$RUN/main.out
MAIN_ERR=$RUN/main.err
t0=$(date +%s)
submit main 300 --conf spark.ui.port="$DRIVER_UI" --class org.nativepool.spark.clustertest.ClusterJob \
	"$app_jar" 4 "$RUN/release" &
main_pid=$!
pids+=($main_pid)
wait_for 280 "$MAIN_OUT" "^READY " "$main_pid" || { tail -30 "$MAIN_ERR"; exit 1; }
APP_ID=$(sed -n 's/^READY //p' "$MAIN_OUT")
echo "test-cluster: main application $APP_ID ran in $(($(date +%s) - t0)) s"

exec_stderrs() { ls "$WORK/$APP_ID"/*/stderr 2>/dev/null; }

secs_between() { # secs_between HH:MM:SS HH:MM:SS (log timestamps of one run)
	echo $(($(date -d "1970-01-01 $2Z" +%s) - $(date -d "1970-01-01 $1Z" +%s)))
}

failed=()

# ---- checks ----

check_main_job_succeeded() {
	local n
	n=$(grep -c '^RESULT ' "$MAIN_OUT" || true)
	[[ $n == 4 ]] || { echo "  expected 4 RESULT lines, got $n; driver stderr:"; grep -E 'JOB FAILED|Exception' "$MAIN_ERR" | head -5; return 1; }
}

check_each_executor_loaded_the_library_from_the_jar() {
	local f ok=0 n=0
	for f in $(exec_stderrs); do
		n=$((n + 1))
		if grep -q 'nativepool: loaded .*libnativepool.so extracted from jar:.*nativepool-spark-.*\.jar!/org/nativepool/native/linux-x86_64/libnativepool.so' "$f"; then
			ok=$((ok + 1))
		else
			echo "  $f: no 'loaded ... extracted from jar:' record"
		fi
	done
	# and every task saw that source
	if grep '^RESULT ' "$MAIN_OUT" | grep -vq 'source=.*extracted_from_jar:'; then
		echo "  a task's library came from elsewhere:"; grep '^RESULT ' "$MAIN_OUT" | grep -v 'extracted_from_jar:'
		return 1
	fi
	echo "  $ok of $n executors"
	((n == 2 && ok == n))
}

check_native_pools_used_and_spark_requested_spills() {
	# every task: Spark asked the pool to spill, the Java spiller (a jni.Spiller) ran and freed
	# bytes, the Spark-side consumer got all it asked for, the Arrow batch came back whole (sum 0..9999)
	local bad
	bad=$(grep '^RESULT ' "$MAIN_OUT" | awk '{
		ok = 1
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		if (v["spillRequests"] < 1 || v["spillerCalls"] < 1 || v["spillBytesFreed"] < 1) ok = 0
		if (v["pressureGranted"] != 50331648 || v["arrowSum"] != 49995000) ok = 0
		if (!ok) print
	}')
	[[ -z $bad ]] || { echo "  $bad"; return 1; }
	grep '^RESULT ' "$MAIN_OUT" | sed 's/ source=[^ ]*//; s/^/  /'
}

check_extracted_library_removed_at_executor_exit() {
	# runs after the main application stopped: its executors exited, their copies are gone
	local dirs d
	dirs=$(grep -ho 'nativepool: loaded /[^ ]*libnativepool.so' $(exec_stderrs) | sed 's/nativepool: loaded //' | xargs -r -n1 dirname)
	[[ -n $dirs ]] || { echo "  no extracted path found"; return 1; }
	for d in $dirs; do
		if [[ -e $d ]]; then echo "  still there: $d"; return 1; fi
	done
}

# Live checks (need the main driver up).
check_prometheus_lists_nativepool_gauges_per_executor() {
	# every executor of the job has its gauges on the driver's endpoint, and they saw Spark's spill
	# requests; the executors send their figures every heartbeat, so wait for one to arrive
	local body e v missing ids
	ids=$(grep -o '^RESULT executor=[^ ]*' "$MAIN_OUT" | cut -d= -f2 | sort -u)
	for _ in $(seq 30); do
		# the URL as the README prints it, trailing slash included: no redirect to follow
		body=$(curl -fsS "http://127.0.0.1:$DRIVER_UI/metrics/prometheus/") || return 1
		printf '%s\n' "$body" >"$RUN/prometheus.txt"
		missing=0
		for e in $ids; do
			v=$(grep -E "^metrics_[A-Za-z0-9_]+_driver_plugin_org_nativepool_spark_NativePoolPlugin_executor_${e}_sparkSpillRequests_Value\{type=\"gauges\"\} [0-9]+$" <<<"$body" | awk '{print $2}' | tail -1)
			[[ -n $v && $v -ge 1 ]] || missing=1
		done
		((missing == 0)) && break
		sleep 1
	done
	for e in $ids; do
		grep -E "_NativePoolPlugin_executor_${e}_(sparkSpillRequests|reserved|heldFromSpark)_Value" <<<"$body" | sed 's/^/  /'
	done
	grep -E "_NativePoolPlugin_total_executors_Value" <<<"$body" | sed 's/^/  /'
	((missing == 0)) || { echo "  an executor of $ids has no sparkSpillRequests >= 1 gauge"; return 1; }
}

check_task_spill_metrics_nonzero() {
	# the REST API the UI reads: the native spill's bytes in every task of the job's stage
	curl -fsS "http://127.0.0.1:$DRIVER_UI/api/v1/applications/$APP_ID/stages?details=true" | python3 -c '
import json, sys
stages = json.load(sys.stdin)
tasks = [t for s in stages for t in (s.get("tasks") or {}).values()]
mem = [t["taskMetrics"]["memoryBytesSpilled"] for t in tasks if t.get("taskMetrics")]
disk = [t["taskMetrics"]["diskBytesSpilled"] for t in tasks if t.get("taskMetrics")]
print("  %d task(s): memoryBytesSpilled %s, diskBytesSpilled %s" % (len(mem), mem, disk))
sys.exit(0 if mem and min(mem) > 0 and min(disk) > 0 else 1)'
}

check_executor_log_has_nativepool_records_with_task_ids() {
	# Go's threshold warning, through log4j on logger org.nativepool.bridge (Spark's default layout
	# prints the logger's last name, its JSON layout the whole), with the task attempt, stage and
	# partition in the text
	local f line
	for f in $(exec_stderrs); do
		line=$(grep -E 'WARN.*\[task [0-9]+ stage [0-9]+\.[0-9]+ partition [0-9]+\] nativepool: task pool reserved bytes' "$f" | grep -E 'bridge' | head -1)
		[[ -n $line ]] || { echo "  $f: no Go record with its task"; return 1; }
		echo "  $line"
	done
}

LIVE_CHECKS=(check_prometheus_lists_nativepool_gauges_per_executor check_task_spill_metrics_nonzero)
for c in "${LIVE_CHECKS[@]}"; do check "${c#check_}" "$c"; done
touch "$RUN/release"
main_rc=0
wait "$main_pid" || main_rc=$?
[[ $main_rc == 0 ]] || echo "test-cluster: main driver exited with $main_rc"
# the Worker stops the application's executors once the driver is gone
for _ in $(seq 60); do
	grep -q "Executor app-.* finished with state\|Application $APP_ID finished\|Cleaning up local directories for application $APP_ID" "$RUN/worker.log" && break
	sleep 0.5
done
sleep 2

CHECKS=(
	check_main_job_succeeded
	check_each_executor_loaded_the_library_from_the_jar
	check_native_pools_used_and_spark_requested_spills
	check_extracted_library_removed_at_executor_exit
	check_executor_log_has_nativepool_records_with_task_ids
)
for c in "${CHECKS[@]}"; do check "${c#check_}" "$c"; done

# ---- broken library, visible to the driver: the application failed at start, once ----
wait "$broken_driver_pid" || true
wait "$wrong_driver_pid" || true
check_broken_library_on_driver_fails_the_application_fast() {
	local msg="nativepool: native library not loaded from $bad (spark.nativepool.library): UnsatisfiedLinkError: Can't load library: $bad"
	local rc secs started failed_at
	read -r rc secs <"$RUN/broken-driver.rc"
	# from the SparkContext's start to its failure (JVM start is the machine's: load average
	# $(cut -d' ' -f1 /proc/loadavg)); the whole run is bounded by submit's timeout
	started=$(grep -m1 'SparkContext: Running Spark version' "$RUN/broken-driver.err" | awk '{print $2}')
	failed_at=$(grep -m1 'ERROR SparkContext: Error initializing SparkContext' "$RUN/broken-driver.err" | awk '{print $2}')
	[[ -n $started && -n $failed_at ]] || { echo "  exit $rc after $secs s; no SparkContext failure in the log"; return 1; }
	echo "  exit $rc after $secs s in all; the SparkContext failed $(secs_between "$started" "$failed_at") s after it started"
	[[ $rc != 0 && $rc != 124 && $rc != 137 ]] || return 1
	(($(secs_between "$started" "$failed_at") < 60)) || return 1
	grep -qF -- "$msg" "$RUN/broken-driver.err" || { echo "  no '$msg' in broken-driver.err"; return 1; }
	# the SparkContext never started: no application reached the Master, no executor launched
	# (checked before broken-exec starts: the main application is the only one registered)
	[[ $(grep -c "Registered app " "$RUN/master.log") == 1 ]] ||
		{ echo "  the broken application registered with the Master"; return 1; }
	! grep -q "Registered executor" "$RUN/broken-driver.err"
}
check broken_library_on_driver_fails_the_application_fast check_broken_library_on_driver_fails_the_application_fast

# ---- broken library in the executors only: tasks fail with the message, executors stay ----
t0=$(date +%s)
rc=0
submit broken-exec 150 --conf spark.ui.enabled=false \
	--conf "spark.executor.extraJavaOptions=-Dnativepool.library=$bad" \
	--class org.nativepool.spark.clustertest.ClusterJob "$app_jar" 2 || rc=$?
BROKEN_EXEC_SECONDS=$(($(date +%s) - t0))
check_broken_library_on_executors_fails_the_job_without_crash_loop() {
	local msg="nativepool: native library not loaded from $bad (system property nativepool.library): UnsatisfiedLinkError: Can't load library: $bad"
	local app n
	local first failed_at
	# how long the job took to fail once executors were there (the part a crash loop would
	# stretch; executor start itself is the machine's: load average $(cut -d' ' -f1 /proc/loadavg))
	first=$(grep -m1 'Registered executor' "$RUN/broken-exec.err" | awk '{print $2}')
	failed_at=$(grep -m1 'DAGScheduler: Job 0 failed' "$RUN/broken-exec.err" | awk '{print $2}')
	echo "  exit $rc after $BROKEN_EXEC_SECONDS s in all; the job failed $(secs_between "$first" "$failed_at") s after the first executor registered"
	[[ $rc == 1 ]] || return 1
	(($(secs_between "$first" "$failed_at") < 60)) || return 1
	grep -q "JOB FAILED: .*$(sed 's/[][\.*^$/]/\\&/g' <<<"$msg")" "$RUN/broken-exec.err" ||
		{ echo "  no 'JOB FAILED: ... $msg' in broken-exec.err"; return 1; }
	app=$(sed -n 's/^READY //p' "$RUN/broken-exec.out")
	# exactly the 2 executors spark.cores.max allows, none lost and relaunched
	n=$(ls -d "$WORK/$app"/*/ 2>/dev/null | wc -l)
	echo "  $app: $n executor(s) launched"
	[[ $n == 2 ]] || return 1
	if grep -q "Removed executor\|Executor lost\|ExecutorLostFailure" "$RUN/broken-exec.err"; then
		echo "  an executor was lost"; return 1
	fi
	grep -l "native pools disabled on executor" "$WORK/$app"/*/stderr | wc -l | grep -qx 2 ||
		{ echo "  not every executor logged that it disabled native pools"; return 1; }
}
check broken_library_on_executors_fails_the_job_without_crash_loop check_broken_library_on_executors_fails_the_job_without_crash_loop

# ---- a jar of another Spark line: refused at the start, naming both lines ----
check_wrong_line_jar_fails_the_application_at_start() {
	local rc started failed_at
	rc=$(<"$RUN/wrong-line-driver.rc")
	started=$(grep -m1 'SparkContext: Running Spark version' "$RUN/wrong-line-driver.err" | awk '{print $2}')
	failed_at=$(grep -m1 'ERROR SparkContext: Error initializing SparkContext' "$RUN/wrong-line-driver.err" | awk '{print $2}')
	[[ -n $started && -n $failed_at ]] || { echo "  exit $rc; no SparkContext failure in the log"; return 1; }
	echo "  $wrong_line on Spark $spark_version: exit $rc; the SparkContext failed $(secs_between "$started" "$failed_at") s after it started"
	[[ $rc != 0 && $rc != 124 && $rc != 137 ]] || return 1
	(($(secs_between "$started" "$failed_at") < 60)) || return 1
	grep -F -- "$WRONG_LINE_MSG" "$RUN/wrong-line-driver.err" | grep -qF -- "$WRONG_LINE_DEPLOY" ||
		{ echo "  no '$WRONG_LINE_MSG ... $WRONG_LINE_DEPLOY' in wrong-line-driver.err"; return 1; }
	grep -m1 -F -- "$WRONG_LINE_MSG" "$RUN/wrong-line-driver.err" | sed 's/^/  /'
	! grep -q "NoClassDefFoundError\|Registered executor" "$RUN/wrong-line-driver.err" ||
		{ echo "  NoClassDefFoundError or an executor in wrong-line-driver.err"; return 1; }
}
check wrong_line_jar_fails_the_application_at_start check_wrong_line_jar_fails_the_application_at_start

# ---- the same jar ahead on the executors' classpath only: every task refused with the message ----
rc=0
submit wrong-line-exec 150 --conf spark.ui.enabled=false \
	--conf "spark.executor.extraClassPath=$wrong_jar" \
	--class org.nativepool.spark.clustertest.ClusterJob "$app_jar" 2 || rc=$?
WRONG_EXEC_RC=$rc
check_wrong_line_jar_on_executors_fails_every_task_without_crash_loop() {
	local app n f
	echo "  exit $WRONG_EXEC_RC"
	[[ $WRONG_EXEC_RC == 1 ]] || return 1
	grep "JOB FAILED: " "$RUN/wrong-line-exec.err" | grep -F -- "$WRONG_LINE_MSG" | grep -qF -- "$WRONG_LINE_DEPLOY" ||
		{ echo "  no 'JOB FAILED: ... $WRONG_LINE_MSG ... $WRONG_LINE_DEPLOY' in wrong-line-exec.err"; return 1; }
	app=$(sed -n 's/^READY //p' "$RUN/wrong-line-exec.out")
	n=$(ls -d "$WORK/$app"/*/ 2>/dev/null | wc -l)
	echo "  $app: $n executor(s) launched"
	[[ $n == 2 ]] || return 1
	if grep -q "Removed executor\|Executor lost\|ExecutorLostFailure" "$RUN/wrong-line-exec.err"; then
		echo "  an executor was lost"; return 1
	fi
	for f in "$WORK/$app"/*/stderr; do
		grep -F -- "$WRONG_LINE_MSG" "$f" | grep -q "native pools disabled on executor" ||
			{ echo "  $f: no 'native pools disabled ... $WRONG_LINE_MSG'"; return 1; }
	done
	! grep -l "NoClassDefFoundError" "$RUN/wrong-line-exec.err" "$WORK/$app"/*/stderr ||
		{ echo "  NoClassDefFoundError above"; return 1; }
}
check wrong_line_jar_on_executors_fails_every_task_without_crash_loop check_wrong_line_jar_on_executors_fails_every_task_without_crash_loop

if ((${#failed[@]} > 0)); then
	echo "test-cluster: FAILED: ${failed[*]} (logs in $RUN)"
	exit 1
fi
echo "test-cluster: all checks passed (logs in $RUN)"
