#!/usr/bin/env bash
# make test-publish: the plugin's artifacts as a Maven repository holds them. Installs Spark lines
# (default: spark3.5_2.12 and spark4.1_2.13) into a scratch local repository, then, from that
# repository alone and offline, resolves each installed pom and builds a project depending on the
# artifact (consumer/), as a team mirroring our jars into its own repository would.
#
#   bash spark/publish-test/run.sh [line ...]      (make test-publish; make lib first)
#
# The scratch repository, build/publish-test/_repository, starts as a tree of symbolic links to the
# files of ~/.m2/repository (Maven's plugins, Spark's and Arrow's jars: nothing is downloaded
# again), without org/nativepool, so that whatever nativepool artifact a build finds there is one
# this run installed. Maven 3.8 has no chained local repositories; the links are the same thing.
#
# Checks, per line (each printing PASS or FAIL):
#   install_prints_no_warning     mvn install of the line's module (its jar, flattened pom, source
#                                 and javadoc jars) with no [WARNING] line
#   installed_files               the jar, the pom, -sources.jar and -javadoc.jar, in the line's
#                                 own directory, org/nativepool/nativepool-spark-<line>/<version>/
#   installed_pom_names_its_line  the pom's artifactId is the line's, it has no parent and no
#                                 ${...} left, and names the line's Spark (spark-core_<scala> and
#                                 spark-sql_<scala>, provided), Arrow (arrow-vector and
#                                 arrow-memory-core provided, arrow-c-data optional: the jar
#                                 bundles it)
#   pom_resolves_offline_to_its_line   Maven resolves that pom's dependencies from the scratch
#                                 repository alone, offline: Spark and Arrow at the line's versions
#   consumer_builds_against_it    the consumer project (the artifact and the line's spark-sql,
#                                 provided) compiles offline from the scratch repository; the
#                                 artifact resolved is the one installed there, and every Arrow and
#                                 Spark artifact on its classpath is the line's version
# Exits 1 if any check failed. Prints how long it took.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
start_s=$(date +%s)
say() { echo "test-publish: $*"; }
MVN=${MVN:-mvn -B -ntp}
lines=("$@")
((${#lines[@]} > 0)) || lines=(spark3.5_2.12 spark4.1_2.13)

out=$root/build/publish-test
# (a name the go tool's ./... skips: the links may dangle where ~/.m2 changes under them)
R=$out/_repository
rm -rf "$out"
mkdir -p "$out"
if [[ -d $HOME/.m2/repository ]]; then
	cp -as "$HOME/.m2/repository" "$R"
	rm -rf "$R/org/nativepool"
else
	mkdir -p "$R"
fi
say "scratch repository $R"

# nativepool's version: the root pom's own (its first <version> at the project's level)
version=$(sed -n 's|^  <version>\(.*\)</version>|\1|p' pom.xml | head -1)

failed=()
check() { # check <name> <function> [args]
	local name=$1
	shift
	if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failed+=("$name"); fi
}

prop() { # prop <line> <property>: a property of the line's module (spark/lines/<line>/pom.xml)
	sed -n "s|.*<$2>\(.*\)</$2>.*|\1|p" "spark/lines/$1/pom.xml" | head -1
}

# The line's Spark release, when it builds against it (Spark 4.3: its module's distribution profile).
dist_args() { # dist_args <line>
	if grep -q '<id>spark-distribution</id>' "spark/lines/$1/pom.xml"; then
		bash spark/dist/pyspark-home.sh "$(prop "$1" spark.version)" >/dev/null
		echo "-Dnativepool.spark.dist=$root/build/pyspark/$(prop "$1" spark.version)"
	fi
}

install_prints_no_warning() { # install_prints_no_warning <line>
	local log=$out/$1-install.log
	# shellcheck disable=SC2046
	if ! $MVN -f "spark/lines/$1/pom.xml" -Dmaven.repo.local="$R" -Dnativepool.lib.dir="$root/build/lib" \
		$(dist_args "$1") -DskipTests -Dmaven.test.skip=true install >"$log" 2>&1; then
		tail -20 "$log"
		return 1
	fi
	! grep -n '\[WARNING\]' "$log" || { echo "  (above: $log)"; return 1; }
}

installed_files() { # installed_files <line>
	local d=$R/org/nativepool/nativepool-spark-$1/$version f ok=0
	for f in "nativepool-spark-$1-$version.jar" "nativepool-spark-$1-$version.pom" \
		"nativepool-spark-$1-$version-sources.jar" "nativepool-spark-$1-$version-javadoc.jar"; do
		if [[ -s $d/$f ]]; then echo "  $f $(stat -c %s "$d/$f") bytes"; else echo "  missing: $d/$f"; ok=1; fi
	done
	return $ok
}

installed_pom_names_its_line() { # installed_pom_names_its_line <line>
	python3 - "$R/org/nativepool/nativepool-spark-$1/$version/nativepool-spark-$1-$version.pom" "$1" \
		"$(prop "$1" spark.version)" "$(prop "$1" scala.binary.version)" "$(prop "$1" arrow.version)" <<'PY'
import sys, xml.etree.ElementTree as ET
pom, line, spark, scala, arrow = sys.argv[1:]
text = open(pom).read()
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
p = ET.fromstring(text)
bad = []
aid = p.findtext("m:artifactId", namespaces=ns)
if aid != "nativepool-spark-" + line: bad.append("artifactId " + aid)
if p.find("m:parent", ns) is not None: bad.append("has a parent")
if "${" in text: bad.append("an unresolved ${...}")
deps = {}
for d in p.findall("m:dependencies/m:dependency", ns):
    g = lambda k: d.findtext("m:" + k, default="", namespaces=ns)
    deps[g("groupId") + ":" + g("artifactId")] = (g("version"), g("scope") or "compile", g("optional") == "true")
want = {
    "org.apache.spark:spark-core_" + scala: (spark, "provided", False),
    "org.apache.spark:spark-sql_" + scala: (spark, "provided", False),
    "org.apache.arrow:arrow-vector": (arrow, "provided", False),
    "org.apache.arrow:arrow-memory-core": (arrow, "provided", False),
    "org.apache.arrow:arrow-c-data": (arrow, "compile", True),
}
for k, v in want.items():
    if deps.get(k) != v: bad.append("%s: %s, want %s" % (k, deps.get(k), v))
for k in deps:
    if k not in want: bad.append("unexpected dependency " + k)
for k, v in sorted(deps.items()):
    print("  %s:%s (%s%s)" % (k, v[0], v[1], ", optional" if v[2] else ""))
for b in bad: print("  " + b)
sys.exit(1 if bad else 0)
PY
}

# resolved <log>: the group:artifact:version lines of a dependency:list log
resolved() { sed -n 's/^\[INFO\]    \([^:]*\):\([^:]*\):[^:]*:\([^:]*\):.*/\1:\2:\3/p' "$1" | sort -u; }

versions_are_the_lines() { # versions_are_the_lines <resolved list file> <spark> <arrow> <scala>
	local bad
	bad=$(awk -F: -v s="$2" -v a="$3" -v sc="$4" '
		$1 == "org.apache.spark" && ($3 != s || $2 !~ ("_" sc "$")) { print "  " $0 " is not Spark " s " for Scala " sc }
		$1 == "org.apache.arrow" && $3 != a { print "  " $0 " is not Arrow " a }' "$1")
	[[ -z $bad ]] || { echo "$bad"; return 1; }
}

pom_resolves_offline_to_its_line() { # pom_resolves_offline_to_its_line <line>
	local log=$out/$1-pom-deps.log
	cp "$R/org/nativepool/nativepool-spark-$1/$version/nativepool-spark-$1-$version.pom" "$out/$1.pom"
	$MVN -o -f "$out/$1.pom" -Dmaven.repo.local="$R" dependency:list >"$log" 2>&1 || { tail -20 "$log"; return 1; }
	resolved "$log" >"$out/$1-pom-deps.txt"
	grep -E '^org\.apache\.(spark:spark-(core|sql)_|arrow:arrow-(vector|memory-core|c-data))' "$out/$1-pom-deps.txt" | sed 's/^/  /'
	echo "  $(wc -l <"$out/$1-pom-deps.txt") artifacts resolved from the scratch repository, offline"
	versions_are_the_lines "$out/$1-pom-deps.txt" "$(prop "$1" spark.version)" "$(prop "$1" arrow.version)" \
		"$(prop "$1" scala.binary.version)"
}

consumer_builds_against_it() { # consumer_builds_against_it <line>
	local log=$out/$1-consumer.log jar
	rm -rf spark/publish-test/consumer/target
	$MVN -o -f spark/publish-test/consumer/pom.xml -Dmaven.repo.local="$R" -Dline="$1" \
		-Dnativepool.version="$version" -Dspark.version="$(prop "$1" spark.version)" \
		-Dscala.binary.version="$(prop "$1" scala.binary.version)" \
		package dependency:list -DoutputAbsoluteArtifactFilename=true >"$log" 2>&1 || { tail -20 "$log"; return 1; }
	! grep -n '\[WARNING\]' "$log" || return 1
	rm -rf spark/publish-test/consumer/target
	jar=$(grep -o "org.nativepool:nativepool-spark-$1:jar:$version:compile:.*" "$log" | sed 's/.*:compile:\(.*\.jar\).*/\1/')
	echo "  nativepool-spark-$1 from $jar"
	[[ $jar == "$R/"* ]] || { echo "  not from the scratch repository"; return 1; }
	resolved "$log" >"$out/$1-consumer-deps.txt"
	grep -E '^org\.apache\.(spark:spark-(core|sql)_|arrow:)' "$out/$1-consumer-deps.txt" | sed 's/^/  /'
	versions_are_the_lines "$out/$1-consumer-deps.txt" "$(prop "$1" spark.version)" "$(prop "$1" arrow.version)" \
		"$(prop "$1" scala.binary.version)"
}

# Resolving an installed pom as a build depending on it does resolves the line's Spark release
# without the pins nativepool's own build adds (spark/lines/spark3.5_*/pom.xml), so it may need
# artifacts ~/.m2 does not have yet: they are fetched into ~/.m2 once (online, nativepool's pom read
# from a copy, never installed there), and the scratch repository gets links to them too.
warm() { # warm <line>: the installed pom's dependencies, and the consumer's but nativepool's
	cp "$R/org/nativepool/nativepool-spark-$1/$version/nativepool-spark-$1-$version.pom" "$out/$1.pom"
	$MVN -q -f "$out/$1.pom" dependency:resolve >"$out/$1-warm.log" 2>&1 || { tail -20 "$out/$1-warm.log"; return 1; }
	python3 - spark/publish-test/consumer/pom.xml "$out/$1-warm-consumer.pom" <<'PY'
import re, sys
pom = open(sys.argv[1]).read()
pom = re.sub(r"\s*<dependency>\s*<groupId>org\.nativepool</groupId>.*?</dependency>", "", pom, flags=re.S)
open(sys.argv[2], "w").write(pom)
PY
	$MVN -q -f "$out/$1-warm-consumer.pom" -Dspark.version="$(prop "$1" spark.version)" \
		-Dscala.binary.version="$(prop "$1" scala.binary.version)" dependency:resolve >>"$out/$1-warm.log" 2>&1 ||
		{ tail -20 "$out/$1-warm.log"; return 1; }
}

for line in "${lines[@]}"; do
	[[ -f spark/lines/$line/pom.xml ]] || { say "no line $line (spark/lines/)"; exit 2; }
	say "$line: Spark $(prop "$line" spark.version), Scala $(prop "$line" scala.binary.version), Arrow $(prop "$line" arrow.version)"
	check "$line: install_prints_no_warning" install_prints_no_warning "$line"
	check "$line: installed_files" installed_files "$line"
	check "$line: installed_pom_names_its_line" installed_pom_names_its_line "$line"
	warm "$line" || say "$line: could not fetch its Spark's dependencies into ~/.m2 (see $out/$line-warm.log)"
done
if [[ -d $HOME/.m2/repository ]]; then
	mv "$R/org/nativepool" "$out/installed"
	cp -asn "$HOME/.m2/repository/." "$R/"
	rm -rf "$R/org/nativepool"
	mv "$out/installed" "$R/org/nativepool"
fi
for line in "${lines[@]}"; do
	check "$line: pom_resolves_offline_to_its_line" pom_resolves_offline_to_its_line "$line"
	check "$line: consumer_builds_against_it" consumer_builds_against_it "$line"
done

say "took $(($(date +%s) - start_s)) s"
if ((${#failed[@]} > 0)); then
	say "FAILED: ${failed[*]} (logs in $out)"
	exit 1
fi
say "all checks passed for ${lines[*]} (logs in $out)"
