# Helpers the cluster scripts source (run.sh, lost-executor.sh, repl-leak.sh,
# ../yarn-test/run.sh). The sourcing script defines say <message>, its own prefixed line on stdout,
# and the array failed.

# The JDK the scripts run and build with: JAVA_HOME, else the one that provides javac; Maven's
# command line, MVN, unless the caller gives one.
JAVA_HOME=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
export JAVA_HOME
JAVA=$JAVA_HOME/bin/java
MVN=${MVN:-mvn -B -ntp}

check() { # check <name> <function>
	if "$2"; then echo "PASS $1"; else echo "FAIL $1"; failed+=("$1"); fi
}

plugin_jar_of() { # plugin_jar_of <line>: that line's built plugin jar, spark/target[/<line>]/, if any
	# (not the source and javadoc jars an install leaves beside it, nor shade's original-*)
	find "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/spark/target" -maxdepth 2 \
		-name "nativepool-spark-$1-*.jar" ! -name 'original-*' ! -name '*-sources.jar' ! -name '*-javadoc.jar' \
		2>/dev/null | head -1
}

stamp_of() { # stamp_of <jar> <key>: a value of the jar's line stamp
	python3 -c 'import sys, zipfile
for l in zipfile.ZipFile(sys.argv[1]).read("org/nativepool/native/version.properties").decode().splitlines():
    if l.startswith(sys.argv[2] + "="): print(l.split("=", 1)[1])' "$1" "$2"
}

descendants() { # descendants <pid>: every process below it, read from /proc (no procps needed)
	local s line rest pid ppid p c
	local -A kids=()
	for s in /proc/[0-9]*/stat; do
		{ line=$(<"$s"); } 2>/dev/null || continue
		rest=${line##*) } # the fields after "(comm)", which may hold spaces: state ppid ...
		read -r _ ppid _ <<<"$rest"
		pid=${s#/proc/}
		kids[$ppid]+="${pid%/stat} "
	done
	local queue=("$1") out=()
	while ((${#queue[@]} > 0)); do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		for c in ${kids[$p]:-}; do
			out+=("$c")
			queue+=("$c")
		done
	done
	echo "${out[@]:-}"
}

wait_for() { # wait_for <seconds> <file> <pattern> [pid]: fails early if pid has exited
	local deadline=$(($(date +%s) + $1))
	until grep -q -- "$3" "$2" 2>/dev/null; do
		if (($(date +%s) >= deadline)) || { [[ -n ${4:-} ]] && ! kill -0 "$4" 2>/dev/null; }; then
			say "no '$3' in $2 after $1 s" >&2
			tail -20 "$2" >&2 || true
			return 1
		fi
		sleep 0.5
	done
}

spark_home() { # spark_home <line> <spark version> <scala version>: exports SPARK_HOME, that line's Spark
	# A line built against its release from PyPI (spark/lines/<line>/pom.xml's spark-distribution
	# profile: Spark 4.3) runs that release, spark/dist/pyspark-home.sh's SPARK_HOME. The others run
	# Spark's jars as Maven resolves spark-core and spark-sql of that release and Scala with their
	# runtime dependencies (spark-home.xml, with the line's pins), copied from Maven's local
	# repository into build/spark-home/<line>/jars, which is all a Worker needs from SPARK_HOME to
	# launch executors (WorkerCommandBuilder builds their classpath from $SPARK_HOME/jars).
	local line=$1 version=$2 scala=$3 root stamp profile
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	if grep -q '<id>spark-distribution</id>' "$root/spark/lines/$line/pom.xml" 2>/dev/null; then
		SPARK_HOME=$(bash "$root/spark/dist/pyspark-home.sh" "$version") || return 1
		export SPARK_HOME
		return 0
	fi
	rm -rf "$root/build/spark-home/jars" # the layout before build/spark-home/<line>
	export SPARK_HOME=$root/build/spark-home/$line
	stamp=$SPARK_HOME/jars/.complete-$version-$scala-$(cksum <"$root/spark/cluster-test/spark-home.xml" | cut -d' ' -f1)
	if [[ ! -f $stamp ]]; then
		rm -rf "$SPARK_HOME/jars"
		# the line's pins, where spark-home.xml has a profile for it
		profile=()
		grep -q "<id>spark-${version%.*}</id>" "$root/spark/cluster-test/spark-home.xml" && profile=(-Pspark-"${version%.*}")
		${MVN:-mvn -B -ntp} -q -f "$root/spark/cluster-test/spark-home.xml" "${profile[@]}" -Dspark.version="$version" \
			-Dscala.binary.version="$scala" dependency:copy-dependencies -DoutputDirectory="$SPARK_HOME/jars" || return 1
		touch "$stamp"
	fi
}
