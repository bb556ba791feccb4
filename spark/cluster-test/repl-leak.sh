#!/usr/bin/env bash
# make test-repl: the driver's heap holders in a real spark-shell. The line's Spark distribution
# (the pyspark release from PyPI, whose package is a complete SPARK_HOME, bin/ and jars/ the same
# files as Spark's own binary distribution, installed by spark/dist/pyspark-home.sh into
# build/pyspark/<version>/) runs bin/spark-shell with the plugin
# jar (--jars, spark.plugins) on local[2], driven through its standard input:
#
# in one shell:
#   idle   the shell starts and stays idle for IDLE_SECONDS: no growth report of the driver's heap;
#   clean  STATEMENTS statements that each allocate a fresh 100 MiB array and keep nothing of it
#          ({ val a = ...; a.length }): no growth report either;
#   leak   STATEMENTS statements that each evaluate an expression returning a fresh 100 MiB array
#          without naming it (new Array[Byte](100 << 20)): the REPL keeps each result (res0,
#          res1, ...) in the objects it wraps the line in, so the heap grows by 100 MiB a
#          statement (after a System.gc() statement that frees the clean ones' garbage).
#          Within those STATEMENTS statements (and the 30 s the driver may wait between two
#          analyses of its heap, spark.nativepool.heapHolders.minInterval) it must report its heap
#          (jvm.heap.afterGc) naming byte[104857600] with a path through the REPL's line wrappers
#          ($lineN.$read...) to a GC root. Then the live Native Memory page's "who holds the heap"
#          action for the driver (as a user's click: GET holders/?jvm=driver) must be accepted and
#          the page show the on-demand analysis with the arrays; headless Chromium, where
#          installed, takes a screenshot of the page (heap-holders.png in the run's directory).
#
#   LINE=spark4.1_2.13 bash spark/cluster-test/repl-leak.sh     (make test-repl SPARK=4.1)
#   JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64 bash spark/cluster-test/repl-leak.sh
#
# LINE picks the plugin jar (spark/target[/<line>]/nativepool-spark-<line>-*.jar, or PLUGIN_JAR) and, from its
# stamp, the Spark release. pyspark ships Spark's Scala 2.12 build for 3.5 and its 2.13 build for
# 4.x, so a line whose Scala differs (spark3.5_2.13) has no distribution to run: the test says so
# and skips (exit 0). A JAVA_HOME whose Java the line's Spark does not run on (Spark 3.5 on Java
# 25) skips too, saying why. Prints PASS/FAIL per check and each report it found; every process it
# starts is stopped by PID on exit. About two minutes on an idle machine.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=spark/cluster-test/common.sh
. "$root/spark/cluster-test/common.sh"
say() { echo "test-repl: $*"; }
cd "$root"
start_s=$(date +%s)

STATEMENTS=${STATEMENTS:-6}
IDLE_SECONDS=${IDLE_SECONDS:-15}
LINE=${LINE:-spark4.1_2.13}
plugin_jar=${PLUGIN_JAR:-$(plugin_jar_of "$LINE")}
if [[ -z $plugin_jar ]]; then
	echo "test-repl: no nativepool-spark-$LINE-*.jar under spark/target; run make jar (SPARK=, SCALA=)" >&2
	exit 2
fi
spark_version=$(stamp_of "$plugin_jar" spark.version)
spark_line=$(stamp_of "$plugin_jar" spark.line)
scala_version=$(stamp_of "$plugin_jar" scala.binary.version)
java_major=$("$JAVA_HOME/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
say "$LINE: $plugin_jar, Spark $spark_version, Scala $scala_version, Java $java_major ($JAVA_HOME)"

# pyspark's Spark is built with Scala 2.12 for 3.5 and 2.13 for 4.x.
dist_scala=$([[ $spark_line == 3.5 ]] && echo 2.12 || echo 2.13)
if [[ $scala_version != "$dist_scala" ]]; then
	say "SKIP: Spark $spark_version is distributed (pyspark) with Scala $dist_scala only, not $scala_version"
	exit 0
fi
# Spark 3.5 runs on Java 8, 11 and 17; 4.0 and 4.1 on 17 and 21; 4.2 and later on 17, 21 and 25.
case $spark_line:$java_major in
3.5:8 | 3.5:11 | 3.5:17 | 4.[01]:17 | 4.[01]:21 | 4.*:17 | 4.*:21 | 4.*:25) ;;
*)
	say "SKIP: Spark $spark_line does not run on Java $java_major"
	exit 0
	;;
esac

# ---- the distribution: the pyspark release's SPARK_HOME (bin/ and jars/), spark/dist/pyspark-home.sh ----
SPARK_HOME=$(bash "$root/spark/dist/pyspark-home.sh" "$spark_version")
export SPARK_HOME
ls "$SPARK_HOME"/jars/spark-repl_"$scala_version"-*.jar >/dev/null

RUN=$root/build/repl-test/$(date +%Y%m%d-%H%M%S)-$$-$LINE-java$java_major
mkdir -p "$RUN"
say "run directory $RUN"
failed=()
shell_pid=""
cleanup() {
	if [[ -n $shell_pid ]] && kill -0 "$shell_pid" 2>/dev/null; then
		local p
		for p in $(descendants "$shell_pid") "$shell_pid"; do kill "$p" 2>/dev/null || true; done
	fi
	exec 3>&- 2>/dev/null || true
}
trap cleanup EXIT

# shell <name> [ui port]: starts bin/spark-shell reading from the FIFO $RUN/<name>.in on fd 3,
# output in $RUN/<name>.out, its web UI on that port (none without one); waits for its session.
shell() {
	local name=$1 ui=(--conf spark.ui.enabled=false)
	[[ -n ${2:-} ]] && ui=(--conf spark.ui.enabled=true --conf spark.ui.port="$2" --conf spark.port.maxRetries=0)
	rm -f "$RUN/$name.in"
	mkfifo "$RUN/$name.in"
	mkdir -p "$RUN/tmp"
	SPARK_LOCAL_IP=127.0.0.1 "$SPARK_HOME/bin/spark-shell" --master 'local[2]' \
		--jars "$plugin_jar" \
		--conf spark.plugins=org.nativepool.spark.NativePoolPlugin \
		"${ui[@]}" \
		--conf spark.driver.extraJavaOptions=-Djava.io.tmpdir="$RUN/tmp" \
		<"$RUN/$name.in" >"$RUN/$name.out" 2>&1 &
	shell_pid=$!
	exec 3>"$RUN/$name.in"
	wait_for 300 "$RUN/$name.out" "Spark session available" "$shell_pid"
}

# statement <text> <result pattern>: types one statement and waits for its result.
statement() {
	echo "$1" >&3
	wait_for 120 "$RUN/$current.out" "$2" "$shell_pid"
	sleep 1
}

# quit: ends the shell and waits for it.
quit() {
	echo ':quit' >&3
	exec 3>&-
	local deadline=$(($(date +%s) + 60))
	while kill -0 "$shell_pid" 2>/dev/null && (($(date +%s) < deadline)); do sleep 0.5; done
	cleanup
	shell_pid=""
}

report_of() { # report_of <name>: the driver's growth reports of its heap
	grep -a 'nativepool: executor driver ledger: jvm.heap.afterGc keeps growing' "$RUN/$1.out" || true
}

leak_reports() { # the reports after the clean statements'
	report_of shell | tail -n +"$(($(grep -c . <<<"$clean_reports") + 1))" | grep . || true
}

# ---- one shell: idle, then clean statements (no report), then the leak ----
current=shell
ui_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
shell shell "$ui_port"
sleep "$IDLE_SECONDS"
idle_reports=$(report_of shell)
for ((i = 0; i < STATEMENTS; i++)); do
	statement '{ val a = new Array[Byte](100 << 20); a.length }' "res$i: Int = 104857600"
done
sleep 5
clean_reports=$(report_of shell)
check_idle() {
	[[ -z $idle_reports ]] || { say "an idle shell reported: $idle_reports"; return 1; }
}
check "idle shell ($IDLE_SECONDS s): no report" check_idle
check_clean() {
	[[ -z $clean_reports ]] || { say "a clean shell reported: $clean_reports"; return 1; }
}
check "clean statements (fresh arrays kept by nothing): no report" check_clean

# ---- leak: unnamed results kept by the REPL: a report naming them through the line wrappers ----
# The clean statements' last arrays are garbage a collection has not reached yet; freed in the
# middle of the leak they would make the heap's floor fall once and start the driver's rising
# readings over. A collection first, so that the leak starts from the floor a fresh shell has.
# (The REPL numbers this statement's Unit result res$STATEMENTS, so the leak starts at the next.)
statement 'System.gc(); println("nativepool-test-gc-done")' "nativepool-test-gc-done"
reported_at=-1
for ((i = 0; i < STATEMENTS; i++)); do
	statement 'new Array[Byte](100 << 20)' "res$((i + STATEMENTS + 1)): Array\[Byte\] = "
	if ((reported_at < 0)) && [[ -n $(leak_reports) ]]; then reported_at=$((i + 1)); fi
done
# the check reads the heap once a second and the analysis takes a few: the last statement's
# report may come just after it; and the driver analyses its heap at most once per
# spark.nativepool.heapHolders.minInterval (30 s), so a rise found within 30 s of the clean
# statements' analysis (garbage, not reported) waits for the interval's end
for ((w = 0; w < 40 && reported_at < 0; w++)); do
	sleep 1
	[[ -n $(leak_reports) ]] && reported_at=$STATEMENTS
done
# the live page's action, as a user clicks it, and the page with the holders
page=http://127.0.0.1:$ui_port/nativememory/
action=$(curl -fsS "${page}holders/?jvm=driver" || true)
for ((w = 0; w < 30; w++)); do
	curl -fsS "$page" -o "$RUN/page.html" 2>/dev/null || true
	grep -q 'on demand' "$RUN/page.html" 2>/dev/null && break
	sleep 1
done
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [[ -n $CHROMIUM ]]; then
	timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$RUN/chromium" \
		--hide-scrollbars --window-size=1400,2400 --screenshot="$RUN/heap-holders.png" "$page#heap-holders" \
		>"$RUN/chromium.log" 2>&1 || true
	[[ -s $RUN/heap-holders.png ]] && say "screenshot $RUN/heap-holders.png"
fi
quit
report=$(leak_reports | head -1)
say "leak: reported after statement $reported_at of $STATEMENTS"
say "report: ${report#*WARN }"
check_leak() {
	[[ -n $report ]] || { say "no report of the driver's heap after $STATEMENTS statements"; return 1; }
	local holder
	holder=$(sed 's/.*; 1) //; s/ | 2) .*//' <<<"$report")
	say "first holder: $holder"
	[[ $holder == *'byte[104857600]'* ]] || { say "the arrays are not the first holder"; return 1; }
	[[ $holder == *'$line'*'$read'* ]] || { say "no path through the REPL's line wrappers"; return 1; }
	[[ $holder == *'← root '* ]] || { say "no GC root"; return 1; }
}
check "leak: the arrays named, held through the REPL's wrappers, within $STATEMENTS statements" check_leak
check_page() {
	[[ $action == *'requested: the driver analyses its heap now'* ]] || { say "the action said: $action"; return 1; }
	grep -q 'who holds the heap</a>' "$RUN/page.html" || { say "no action on the live page"; return 1; }
	grep -q 'on demand' "$RUN/page.html" || { say "no on-demand analysis on the live page"; return 1; }
	grep -q 'byte\[104857600\]' "$RUN/page.html" || { say "the arrays are not on the live page"; return 1; }
}
check "live page: the action analyses the driver, the holders shown" check_page

say "$LINE on Java $java_major: ${#failed[@]} failed, in $(($(date +%s) - start_s)) s"
((${#failed[@]} == 0))
