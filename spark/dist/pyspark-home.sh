#!/usr/bin/env bash
# A Spark distribution from PyPI: pyspark==VERSION installed into its own virtual environment,
# build/pyspark/<VERSION>/venv, whose pyspark package is a complete SPARK_HOME: jars/ (every jar of
# the release: spark-core, spark-sql, spark-yarn, Spark's Hadoop client, Arrow, Scala …), bin/ and
# the Python side (pyspark itself and py4j). Also made, beside it:
#   build/pyspark/<VERSION>/home         a link to that SPARK_HOME
#   build/pyspark/<VERSION>/python       the venv's python, which has pyspark
#   build/pyspark/<VERSION>/spark-jars.jar  a jar of nothing but a manifest whose Class-Path names
#                                        every jar of home/jars (relative paths), so that one
#                                        classpath entry, for javac and for a JVM, is the release's
#                                        whole classpath (the Spark 4.3 line's build uses it)
# Prints the SPARK_HOME on stdout; everything else goes to stderr. Installs once: a stamp file
# marks a complete install, and a broken one is made again.
#
#   bash spark/dist/pyspark-home.sh 4.3.0    ->  <repo>/build/pyspark/4.3.0/home
#
# Who uses it:
#   - the Spark 4.3 line (spark/lines/spark4.3_2.13): Maven Central serves Spark 4.3.0's
#     spark-core and spark-sql but not the rest of the release (its spark-parent pom, catalyst,
#     sql-api, …), so the line builds and tests against the release's own jars/ (spark/dist/
#     classpath-jar.sh), and its cluster tests run this SPARK_HOME;
#   - make test-yarn (spark/yarn-test/run.sh): the line's Spark with spark-yarn, which Maven
#     Central serves only for some releases, and the Python side of the PySpark job.
# Needs python3 with venv and pip, and PyPI (a pyspark release is about 450 MB).
set -euo pipefail

version=${1:?usage: pyspark-home.sh VERSION}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$root/build/pyspark/$version
stamp=$dir/.complete
python=${PYTHON:-python3}

home_of() { "$dir/venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'; }

if [[ -f $stamp && -d $dir/home/jars && -f $dir/spark-jars.jar ]]; then
	echo "$dir/home"
	exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
echo "pyspark-home: installing pyspark==$version into $dir/venv (from PyPI; a few minutes)" >&2
"$python" -m venv "$dir/venv" >&2
"$dir/venv/bin/pip" install -q --disable-pip-version-check "pyspark==$version" >&2
home=$(home_of)
n=$(ls "$home/jars" | grep -c '\.jar$')
# A glob, not `ls | grep -q`: under pipefail, grep -q leaving at its first match can kill ls
# with SIGPIPE and fail the check on a listing that has the jar.
cores=("$home"/jars/spark-core_*-"$version".jar)
[[ -e ${cores[0]} ]] || {
	echo "pyspark-home: $home/jars has no spark-core of $version" >&2
	exit 1
}
ln -sfn "$home" "$dir/home"
ln -sfn venv/bin/python "$dir/python"
# the manifest's Class-Path: paths relative to the jar's own directory, 72-byte lines, each
# continuation line starting with a space (the jar file specification)
"$dir/venv/bin/python" - "$dir" <<'PY'
import os, sys, zipfile
d = sys.argv[1]
jars = sorted(j for j in os.listdir(os.path.join(d, "home", "jars")) if j.endswith(".jar"))
value = " ".join("home/jars/" + j for j in jars)
line = ("Class-Path: " + value).encode()
out = [line[:72]]
line = line[72:]
while line:
    out.append(b" " + line[:71])
    line = line[71:]
manifest = b"Manifest-Version: 1.0\r\n" + b"\r\n".join(out) + b"\r\n\r\n"
with zipfile.ZipFile(os.path.join(d, "spark-jars.jar.tmp"), "w") as z:
    z.writestr("META-INF/MANIFEST.MF", manifest)
os.replace(os.path.join(d, "spark-jars.jar.tmp"), os.path.join(d, "spark-jars.jar"))
PY
touch "$stamp"
echo "pyspark-home: Spark $version: $home ($n jars)" >&2
echo "$dir/home"
