#!/usr/bin/env bash
# make test-yarn: nativepool on a real YARN. Hadoop's MiniYARNCluster (MiniYarn.java: a
# ResourceManager and a NodeManager in their own JVM, the NodeManager's physical-memory check on,
# no cgroups, containers launched by shell scripts as on a cluster) runs three Spark applications
# in YARN client mode, submitted with the line's own bin/spark-submit and only our jars:
#
#   kill     YarnSortJob, the demo's native sort (examples/spark) with a burst of direct buffers
#            nobody accounts for in the first attempt of partition 0, sized so that only native
#            memory giving way keeps the container under its size (the container's headroom less
#            32 MiB, held while the sort takes the rest of its input); the pod guard off. The
#            NodeManager must kill the container (exit status -104, the JVM SIGTERM'd: 143), the
#            driver's diagnosis must say "killed by YARN's memory check" with YARN's figures, the
#            container and the part that grew, and the live Native Memory page must show the
#            container and the limit YARN enforced. The partition's retry completes the job.
#   guarded  the same job with the pod guard on (auto: the container's size, held against its
#            process tree as the NodeManager counts it): no container lost, a correct result, a
#            guard episode in which native memory gave way.
#   pyspark  pyspark_job.py: a Python worker of the executor takes bytearrays until YARN kills the
#            container; the guard's figure (the process tree) counts the worker (its last sample
#            near the container's size, most of it the worker's growth), and the driver's
#            diagnosis names it (python.workers).
#
#   bash spark/yarn-test/run.sh            (the Makefile builds the plugin jar first: make jar)
#   LINE=spark4.3_2.13 bash spark/yarn-test/run.sh   (make test-yarn SPARK=4.3)
#
# Spark is the line's release as PyPI ships it (spark/dist/pyspark-home.sh: spark-yarn, Spark's
# Hadoop client and the Python side, which Maven Central does not serve for every line); the
# cluster's Hadoop is hadoop-client-minicluster of the version of that release's Hadoop client
# (minicluster.xml). The demo's engine is examples/spark's (build.sh: libnativesort.so, loaded with
# spark.nativepool.library, and the demo jar). Checks print PASS or FAIL; the figures of each run
# follow. Everything it starts is stopped by PID on exit, failure included (the containers are the
# NodeManager's descendants). Logs in build/yarn-test/<timestamp>/: yarn.log (the ResourceManager's
# and NodeManager's), <run>.out and .err (each driver's), and target/ (each container's stdout and
# stderr). Prints how long it took.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=spark/cluster-test/common.sh
. "$root/spark/cluster-test/common.sh"
say() { echo "test-yarn: $*"; }
cd "$root"
start_s=$(date +%s)

NODE_MB=${YARN_NODE_MB:-6144}

# ---- the demo's engine (libnativesort.so, the demo jar) ----
# shellcheck source=examples/spark/build.sh
. examples/spark/build.sh >&2
demo_jar=$root/$jar
sort_lib=$root/$lib

# ---- the plugin jar of the line and its Spark from PyPI ----
LINE=${LINE:-spark4.1_2.13}
plugin_jar=$(plugin_jar_of "$LINE")
if [[ -z $plugin_jar ]]; then
	say "no nativepool-spark-$LINE-*.jar under spark/target; run make jar (SPARK=, SCALA=)" >&2
	exit 2
fi
spark_version=$(stamp_of "$plugin_jar" spark.version)
scala_version=$(stamp_of "$plugin_jar" scala.binary.version)
SPARK_HOME=$(bash spark/dist/pyspark-home.sh "$spark_version")
export SPARK_HOME
PYTHON=$root/build/pyspark/$spark_version/python
hadoop_version=$(ls "$SPARK_HOME/jars" | sed -n 's/^hadoop-client-api-\(.*\)\.jar$/\1/p' | head -1)
[[ -n $hadoop_version ]] || { say "no hadoop-client-api jar in $SPARK_HOME/jars" >&2; exit 2; }
say "$LINE: $plugin_jar on Spark $spark_version (Scala $scala_version), YARN of Hadoop $hadoop_version"

# ---- the cluster's classpath: hadoop-client-minicluster of that Hadoop ----
HJARS=$root/build/yarn-test/hadoop-$hadoop_version/jars
stamp=$HJARS/.complete-$(cksum <spark/yarn-test/minicluster.xml | cut -d' ' -f1)
if [[ ! -f $stamp ]]; then
	rm -rf "$HJARS"
	$MVN -q -f spark/yarn-test/minicluster.xml -Dhadoop.version="$hadoop_version" dependency:copy-dependencies \
		-DoutputDirectory="$HJARS"
	touch "$stamp"
fi

RUN=$root/build/yarn-test/$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$RUN/cluster-classes" "$RUN/classes"
say "run directory $RUN"
"$JAVA_HOME/bin/javac" -Xlint:all -Werror -proc:none --release 17 -d "$RUN/cluster-classes" -cp "$HJARS/*" \
	spark/yarn-test/src/org/nativepool/spark/yarntest/MiniYarn.java
# -path: a release's jars/ (Spark 4.3's from PyPI) has derby, whose manifest names jars it lacks
"$JAVA_HOME/bin/javac" -Xlint:all,-classfile,-path -Werror -proc:none --release 17 -d "$RUN/classes" \
	-cp "$SPARK_HOME/jars/*:$plugin_jar:$demo_jar" spark/yarn-test/src/org/nativepool/spark/yarntest/YarnSortJob.java
app_jar=$RUN/nativepool-yarn-test-job.jar
"$JAVA_HOME/bin/jar" --create --file "$app_jar" -C "$RUN/classes" .

# ---- everything started is stopped by PID, on any exit ----
pids=()
stop_all() {
	local p c
	touch "$RUN/conf/stop" 2>/dev/null || true
	for p in "${pids[@]}"; do
		for _ in $(seq 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
		for c in $(descendants "$p"); do kill "$c" 2>/dev/null || true; done
		kill "$p" 2>/dev/null || true
	done
	say "took $(($(date +%s) - start_s)) s"
}
trap stop_all EXIT
trap "exit 130" INT TERM

# ---- the YARN cluster ----
(cd "$RUN" && exec "$JAVA" @"$root/spark/spark-jvm.args" -Xmx768m \
	-Dlog4j.configuration="file:$root/spark/yarn-test/log4j.properties" \
	-cp "$HJARS/*:$RUN/cluster-classes" org.nativepool.spark.yarntest.MiniYarn "$RUN/conf" "$NODE_MB") \
	>"$RUN/yarn.out" 2>"$RUN/yarn.log" &
yarn_pid=$!
pids+=("$yarn_pid")
wait_for 240 "$RUN/yarn.out" "^READY " "$yarn_pid"
export HADOOP_CONF_DIR=$RUN/conf YARN_CONF_DIR=$RUN/conf
say "YARN up: ResourceManager $(sed -n 's/^READY //p' "$RUN/yarn.out"); NodeManager:" \
	"$(grep -o 'resources allocated to containers to <[^>]*>' "$RUN/yarn.log" | head -1)," \
	"$(grep -o 'Physical memory check enabled: [a-z]*' "$RUN/yarn.log" | head -1), every second"

# ---- submitting ----
read -r UI_KILL UI_GUARDED UI_PYSPARK <<<"$(python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))
for s in ss: s.close()')"
EXEC_MEMORY_MB=512
OVERHEAD_MB=384
OFFHEAP_MB=256
CONTAINER_MB=$((EXEC_MEMORY_MB + OVERHEAD_MB + OFFHEAP_MB))
submit_conf=(
	--master yarn --deploy-mode client
	--conf spark.plugins=org.nativepool.spark.NativePoolPlugin
	--conf "spark.yarn.jars=local:$SPARK_HOME/jars/*"
	--conf spark.yarn.maxAppAttempts=1
	--conf spark.yarn.am.memory=384m
	--conf spark.dynamicAllocation.enabled=false
	--conf spark.executor.instances=1
	--conf spark.executor.cores=1
	--conf spark.executor.memory=${EXEC_MEMORY_MB}m
	--conf spark.executor.memoryOverhead=${OVERHEAD_MB}m
	--conf spark.memory.offHeap.enabled=true
	--conf spark.memory.offHeap.size=${OFFHEAP_MB}m
	--conf "spark.executor.extraJavaOptions=-XX:MaxDirectMemorySize=4g"
	--conf spark.executor.heartbeatInterval=1s
	--conf spark.nativepool.eventLog.sampleEvery=1
	--conf spark.task.maxFailures=4
	--conf spark.driver.memory=512m
	--conf spark.driver.host=127.0.0.1
	--conf spark.driver.bindAddress=127.0.0.1
)
submit() { # submit <name> <timeout s> <args...>: the driver's output in $RUN/<name>.{out,err}
	local name=$1 limit=$2
	shift 2
	mkdir -p "$RUN/$name"
	timeout --kill-after=10 "$limit" "$SPARK_HOME/bin/spark-submit" "${submit_conf[@]}" "$@" \
		>"$RUN/$name.out" 2>"$RUN/$name.err"
}
app_of() { sed -n 's/^READY //p' "$RUN/$1.out"; }
container_logs() { # container_logs <app id>: each of its containers' stderr
	find "$RUN/target" -path "*/$1/container_*/stderr" 2>/dev/null | sort
}

# Rows per partition: enough for the sort to fill its share of the off-heap pool before the burst.
ROWS=${YARN_TEST_ROWS:-12000000}
TRIGGER=$((96 << 20))
# The guard's reserve: its default (2% of the limit, at least 32 MiB) leaves a 1,152 MiB container
# 32 MiB to react in, and the NodeManager kills at the first sample over the size.
GUARD_RESERVE=96m
sort_job() { # sort_job <name> <ui port> <guard on|off>
	submit "$1" 900 --jars "$plugin_jar,$demo_jar" \
		--conf spark.nativepool.library="$sort_lib" \
		--conf spark.nativepool.guard.enabled="$([[ $3 == on ]] && echo auto || echo false)" \
		--conf spark.nativepool.guard.reserve="$GUARD_RESERVE" \
		--conf spark.ui.port="$2" \
		--class org.nativepool.spark.yarntest.YarnSortJob "$app_jar" "$RUN/$1" 2 "$ROWS" "$TRIGGER" &
}
release() { touch "$RUN/$1/release"; }
pyspark_job() { # pyspark_job <name> <ui port>
	PYSPARK_PYTHON=$PYTHON PYSPARK_DRIVER_PYTHON=$PYTHON submit "$1" 900 --jars "$plugin_jar" \
		--conf spark.pyspark.python="$PYTHON" --conf spark.pyspark.driver.python="$PYTHON" \
		--conf spark.nativepool.guard.reserve="$GUARD_RESERVE" \
		--conf spark.ui.port="$2" spark/yarn-test/pyspark_job.py "$RUN/$1" 1600 &
}
start_app() { # start_app <launcher> <name> <args...>: the launcher's application, app_pid its PID
	"$@"
	app_pid=$!
	pids+=("$app_pid")
}
await_app() { # await_app <launcher> <name> <args...>: waits for READY
	# Spark races on YARN at the SparkContext's start: the ApplicationMaster's web UI filter
	# (AmIpFilter, added from an RPC thread) against the UI's handlers being started, failing the
	# SparkContext with a ConcurrentModificationException now and then; such a start is made once
	# more, saying so.
	local name=$2
	wait_for 840 "$RUN/$name.out" "^READY " "$app_pid" && return 0
	if grep -q "Error initializing SparkContext" "$RUN/$name.err" && grep -q ConcurrentModificationException "$RUN/$name.err"; then
		say "$name: the SparkContext failed at its start in Spark's race between YARN's UI filter and" \
			"its UI handlers (ConcurrentModificationException, $name-first.err); once more"
		mv "$RUN/$name.err" "$RUN/$name-first.err"
		start_app "$@"
		wait_for 840 "$RUN/$name.out" "^READY " "$app_pid" && return 0
	fi
	tail -40 "$RUN/$name.err"
	return 1
}

failed=()
results_ok() { # results_ok <name> <partitions>: every partition ordered and complete
	local n bad
	n=$(grep -c '^RESULT ' "$RUN/$1.out" || true)
	bad=$(grep '^RESULT ' "$RUN/$1.out" | grep -v 'ordered=true complete=true' || true)
	grep '^RESULT ' "$RUN/$1.out" | sed 's/^/  /'
	[[ $n == "$2" && -z $bad ]]
}

# ================= run 1: the container killed by YARN (guard off) =================
say "kill: YarnSortJob, $ROWS rows per partition, a burst in partition 0's first attempt, guard off"
t0=$(date +%s)
start_app sort_job kill "$UI_KILL" off
await_app sort_job kill "$UI_KILL" off || exit 1
kill_pid=$app_pid
KILL_APP=$(app_of kill)
KILL_SECONDS=$(($(date +%s) - t0))

check_killed_container_by_yarns_memory_check() {
	local nm cid am
	nm=$(grep "is running .*beyond the 'PHYSICAL' memory limit" "$RUN/yarn.log" | grep "${KILL_APP#application_}" | head -1 || true)
	[[ -n $nm ]] || { echo "  no NodeManager kill of $KILL_APP in yarn.log"; return 1; }
	echo "  NodeManager: ${nm:0:400}"
	cid=$(grep -o 'containerID=container_[0-9_]*' <<<"$nm" | cut -d= -f2)
	grep -m1 "Exit code from container $cid is : 143" "$RUN/yarn.log" | cut -c1-300 | sed 's/^/  /' ||
		{ echo "  no exit code 143 for $cid in yarn.log"; return 1; }
	# the ApplicationMaster's allocator (the container ending in _000001) gets YARN's exit status
	am=$(container_logs "$KILL_APP" | grep '_000001/stderr$' | head -1)
	grep -h -m1 "Completed container $cid .*exit status: -104" "$am" | cut -c1-300 | sed 's/^/  ApplicationMaster: /' ||
		{ echo "  no exit status -104 for $cid in the ApplicationMaster's log"; return 1; }
	grep -m1 "Container killed by YARN for exceeding physical memory limits" "$RUN/kill.err" | cut -c1-400 |
		sed 's/^.*Lost executor/  driver: Lost executor/'
}
check_driver_diagnosis_says_killed_by_yarns_memory_check() {
	local line
	line=$(grep -m1 "ended: killed by its container's memory limit" "$RUN/kill.err" || true)
	[[ -n $line ]] || { echo "  no diagnosis line in kill.err"; return 1; }
	echo "  ${line:0:1200}"
	[[ $line == *"killed by YARN's memory check"* ]] || { echo "  not YARN's memory check"; return 1; }
	[[ $line =~ Container\ container_[0-9_]+ ]] || { echo "  no container id"; return 1; }
	[[ $line == *"YARN's limit "* ]] || { echo "  no limit YARN enforced"; return 1; }
	[[ $line == *"grew over the last"*"jvm.direct +"* ]] || { echo "  jvm.direct not named as grown"; return 1; }
}
check_live_page_shows_the_container_and_yarns_limit() {
	local html c
	html=$(curl -fsS "http://127.0.0.1:$UI_KILL/nativememory/") || { echo "  no page at :$UI_KILL"; return 1; }
	printf '%s\n' "$html" >"$RUN/kill-page.html"
	c=$(grep -o "container_[0-9_]*" <<<"$html" | head -1)
	echo "  container $c; limit: $(grep -o '[0-9.]* [GM]iB, enforced by YARN[^<]*' <<<"$html" | head -1)"
	[[ -n $c ]] && grep -q "enforced by YARN" <<<"$html"
}
check_job_completed_on_the_retry() {
	results_ok kill 2 || return 1
	grep -q '^RESULT partition=0 attempt=[1-9]' "$RUN/kill.out" || { echo "  partition 0 ran once only"; return 1; }
}
for c in check_killed_container_by_yarns_memory_check check_driver_diagnosis_says_killed_by_yarns_memory_check \
	check_live_page_shows_the_container_and_yarns_limit check_job_completed_on_the_retry; do
	check "kill: ${c#check_}" "$c"
done
release kill
wait "$kill_pid" || true

# ================= run 2: the same job, guard on =================
say "guarded: the same job, the pod guard on"
t0=$(date +%s)
start_app sort_job guarded "$UI_GUARDED" on
await_app sort_job guarded "$UI_GUARDED" on || exit 1
guarded_pid=$app_pid
GUARDED_APP=$(app_of guarded)
GUARDED_SECONDS=$(($(date +%s) - t0))

check_guarded_run_survives_with_a_correct_result() {
	results_ok guarded 2 || return 1
	grep -q '^RESULT partition=0 attempt=0 .* burst=[1-9]' "$RUN/guarded.out" ||
		{ echo "  partition 0's first attempt did not burst and complete"; return 1; }
	! grep -q "Container killed by YARN\|ExecutorLostFailure" "$RUN/guarded.err" || { echo "  a container was lost"; return 1; }
}
check_guard_kept_the_process_tree_and_native_memory_gave_way() {
	local f on ep
	f=$(container_logs "$GUARDED_APP" | xargs grep -l "yarn-test: burst of" | head -1)
	[[ -n $f ]] || { echo "  no executor log with the burst"; return 1; }
	grep -m1 "yarn-test: burst of" "$f" | sed 's/^/  /'
	on=$(grep -m1 "pod guard on" "$f" || true)
	echo "  ${on:0:400}"
	[[ $on == *"process tree"* ]] || { echo "  the guard does not keep the process tree"; return 1; }
	ep=$(grep "pod guard episode" "$f" || true)
	[[ -n $ep ]] || { echo "  no pod guard episode"; return 1; }
	printf '%s\n' "$ep" | sed 's/^.*nativepool: /  /' | cut -c1-700
	grep -q "spilled [1-9]" <<<"$ep"
}
for c in check_guarded_run_survives_with_a_correct_result check_guard_kept_the_process_tree_and_native_memory_gave_way; do
	check "guarded: ${c#check_}" "$c"
done
release guarded
wait "$guarded_pid" || true

# ================= run 3: a Python worker outgrows the container =================
say "pyspark: a Python worker takes bytearrays until YARN kills its container"
t0=$(date +%s)
start_app pyspark_job pyspark "$UI_PYSPARK"
await_app pyspark_job pyspark "$UI_PYSPARK" || exit 1
pyspark_pid=$app_pid
PYSPARK_APP=$(app_of pyspark)
PYSPARK_SECONDS=$(($(date +%s) - t0))

check_python_worker_killed_by_yarn_and_named_by_the_diagnosis() {
	local line
	grep '^RESULT ' "$RUN/pyspark.out" | sed 's/^/  /'
	line=$(grep -m1 "ended: killed by its container's memory limit" "$RUN/pyspark.err" || true)
	[[ -n $line ]] || { echo "  no diagnosis line in pyspark.err"; return 1; }
	echo "  ${line:0:1200}"
	[[ $line == *"killed by YARN's memory check"* && $line == *"python.workers +"* ]]
}
check_guard_counted_the_worker_in_the_containers_total() {
	# the guard's last figure (the container's process tree) near the limit, with the Python
	# worker's growth most of it: the JVM alone held far less
	local line u p limit ep f
	line=$(grep -m1 "ended: killed by its container's memory limit" "$RUN/pyspark.err" || true)
	u=$(sed -n 's/.* unreclaimable \([0-9,.]*\) MiB.*/\1/p' <<<"$line" | tr -d ,)
	p=$(sed -n 's/.*python\.workers +\([0-9,.]* [MG]iB\).*/\1/p' <<<"$line" |
		awk '{ v = $1; gsub(",", "", v); print ($2 == "GiB" ? v * 1024 : v) }')
	limit=$CONTAINER_MB
	echo "  the guard's last figure: ${u:-?} MiB of the $limit MiB container; python.workers grew ${p:-?} MiB"
	f=$(container_logs "$PYSPARK_APP" | xargs grep -l "pod guard episode" 2>/dev/null | head -1 || true)
	if [[ -n $f ]]; then
		ep=$(grep -m1 "pod guard episode" "$f")
		echo "  ${ep#*nativepool: }" | cut -c1-500
	fi
	[[ -n $u && -n $p ]] || return 1
	awk -v u="$u" -v p="$p" -v l="$limit" 'BEGIN { exit !(u >= 0.9 * l && p >= u / 2) }'
}
for c in check_python_worker_killed_by_yarn_and_named_by_the_diagnosis check_guard_counted_the_worker_in_the_containers_total; do
	check "pyspark: ${c#check_}" "$c"
done
release pyspark
wait "$pyspark_pid" || true

say "containers of $CONTAINER_MB MiB (executor $EXEC_MEMORY_MB + overhead $OVERHEAD_MB + off-heap $OFFHEAP_MB);" \
	"kill run $KILL_SECONDS s, guarded run $GUARDED_SECONDS s, PySpark run $PYSPARK_SECONDS s to READY"
if ((${#failed[@]} > 0)); then
	say "FAILED: ${failed[*]} (logs in $RUN)"
	exit 1
fi
say "all checks passed (logs in $RUN)"
