#!/usr/bin/env bash
# The build shared by run.sh (the demo) and soak.sh (the streaming soak), sourced by both from the
# repository's root: builds build/lib/libnativesort.so (the demo's Go engine, the streaming
# aggregation and every nativepool native, one Go runtime), build/lib/libnativepool.so (which the
# plugin jar carries) and the Java modules, and sets
#   JAVA_HOME  the JDK of javac unless set
#   lib        build/lib/libnativesort.so
#   jar        the demo module's jar
#   cp_file    examples/spark/target/classpath.txt: the plugin jar, Spark and Arrow (which an
#              executor provides, and a JVM started by hand must be given)
# Sourced, not run: it changes the caller's shell (set -euo pipefail is the caller's).

JAVA_HOME=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
export JAVA_HOME
export CGO_ENABLED=1
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -I$JAVA_HOME/include -I$JAVA_HOME/include/linux"
lib=build/lib/libnativesort.so

echo "${0##*/}: building $lib and the Java modules..." >&2
mkdir -p build/lib
go build -buildmode=c-shared -o "$lib" ./examples/spark/native
# The plugin jar carries libnativepool.so (Maven refuses to package without it); the demo and the
# soak load $lib by path (spark.nativepool.library).
# (Replaced only when it changed, so that an unchanged library does not make Maven run below.)
go build -buildmode=c-shared -o build/lib/libnativepool.so.new ./jni/libnativepool
if cmp -s build/lib/libnativepool.so.new build/lib/libnativepool.so; then
	rm -f build/lib/libnativepool.so.new
else
	mv build/lib/libnativepool.so.new build/lib/libnativepool.so
fi
# The Maven reactor (pom.xml) builds the plugin (spark/) and the demo (examples/spark/) together;
# the demo module's package phase also writes the JVM's classpath: the plugin jar, and Spark and
# Arrow, which are 'provided' by an executor but must be on this JVM's classpath.
# Maven is skipped when its outputs are newer than every source and pom (a harness that runs the
# demo many times, like bench/container, then pays the build once).
cp_file=examples/spark/target/classpath.txt
jar=$(ls examples/spark/target/nativepool-spark-demo-*.jar 2>/dev/null | head -1 || true)
plugin_jar=$(ls spark/target/nativepool-spark-*.jar 2>/dev/null | grep -v -e '-sources\.jar$' -e '-javadoc\.jar$' | head -1 || true)
if [[ -z $jar || -z $plugin_jar || ! -s $cp_file ]] ||
	[[ -n $(find pom.xml spark/pom.xml spark/lines spark/src/main build/lib/libnativepool.so -newer "$plugin_jar" -print -quit) ]] ||
	[[ -n $(find pom.xml examples/spark/pom.xml examples/spark/src/main -newer "$jar" -print -quit) ]]; then
	mvn -B -q -f pom.xml -DskipTests package
	jar=$(ls examples/spark/target/nativepool-spark-demo-*.jar | head -1)
else
	echo "${0##*/}: the Java modules are up to date (Maven skipped)" >&2
fi
