#!/usr/bin/env bash
# make test-matrix: every Spark line given (SPARK:SCALA, e.g. 3.5:2.12 4.2:2.13), one after the
# other (the machine runs one Maven or Spark job at a time): the line's plugin jar (make jar), its
# Spark-facing JUnit tests (make test-spark) and its standalone cluster test (make test-cluster).
# A line that fails does not stop the next. Logs in build/matrix/<line>/{jar,test-spark,
# test-cluster}.log; at the end a table, line by line: compile, tests run / passed / failed /
# skipped, cluster checks passed, minutes taken. Exits 1 if any line failed.
#
#   MAKE=make bash spark/test-matrix.sh 3.5:2.12 3.5:2.13 4.0:2.13 4.2:2.13
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
MAKE=${MAKE:-make}
out=$root/build/matrix
mkdir -p "$out"
start_s=$(date +%s)
rows=()
failed=0

# surefire's totals (one line per execution: the unit group, then the SparkContext group), summed
surefire_totals() { # surefire_totals <log>: "run failures errors skipped"
	grep -E '^\[(INFO|WARNING|ERROR)\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$' "$1" |
		sed -E 's/.*Tests run: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+), Skipped: ([0-9]+)/\1 \2 \3 \4/' |
		awk '{r += $1; f += $2; e += $3; s += $4} END {print r + 0, f + 0, e + 0, s + 0}'
}

for l in "$@"; do
	spark=${l%%:*}
	scala=${l#*:}
	line=spark${spark}_$scala
	dir=$out/$line
	rm -rf "$dir"
	mkdir -p "$dir"
	t0=$(date +%s)
	compile=FAIL tests=- cluster=- ok=1
	echo "test-matrix: $line: jar"
	if $MAKE --no-print-directory jar SPARK="$spark" SCALA="$scala" >"$dir/jar.log" 2>&1; then
		compile=ok
		echo "test-matrix: $line: Spark-facing tests"
		$MAKE --no-print-directory test-spark SPARK="$spark" SCALA="$scala" >"$dir/test-spark.log" 2>&1 || ok=0
		read -r run fails errors skipped <<<"$(surefire_totals "$dir/test-spark.log")"
		tests="$run run, $((run - fails - errors - skipped)) passed, $((fails + errors)) failed, $skipped skipped"
		((run > 0)) || ok=0
		echo "test-matrix: $line: $tests; cluster test"
		$MAKE --no-print-directory test-cluster SPARK="$spark" SCALA="$scala" >"$dir/test-cluster.log" 2>&1 || ok=0
		pass=$(grep -c '^PASS ' "$dir/test-cluster.log")
		fail=$(grep -c '^FAIL ' "$dir/test-cluster.log")
		cluster="$pass of $((pass + fail)) checks passed"
		((pass > 0 && fail == 0)) || ok=0
		echo "test-matrix: $line: $cluster"
	else
		ok=0
		tail -20 "$dir/jar.log"
	fi
	minutes=$(awk -v s=$(($(date +%s) - t0)) 'BEGIN {printf "%.1f", s / 60}')
	((ok)) || failed=1
	rows+=("$(printf '| %-13s | %-7s | %-48s | %-24s | %5s | %s |' "$line" "$compile" "$tests" "$cluster" "$minutes" \
		"$( ((ok)) && echo PASS || echo "FAIL (build/matrix/$line)")")")
done

echo
printf '| %-13s | %-7s | %-48s | %-24s | %5s | %s |\n' line compile "JUnit (make test-spark)" "make test-cluster" min result
printf '|%s|%s|%s|%s|%s|%s|\n' --------------- --------- -------------------------------------------------- -------------------------- ------- --------
printf '%s\n' "${rows[@]}"
echo "test-matrix: $# line(s) in $(awk -v s=$(($(date +%s) - start_s)) 'BEGIN {printf "%.1f", s / 60}') minutes"
exit $failed
