#!/usr/bin/env bash
# The Comet side of the comparison with nativepool's Spark demo: the same external sort, run
# through DataFusion Comet 1.2.0 (org.apache.datafusion:comet-spark-spark4.1_2.13:1.2.0, Maven
# Central) in Spark 4.1.3 local[2], measuring peak RSS growth / peak off-heap execution memory.
# See CometSortBench.java.
#
#   bash bench/comet/run.sh [CometSortBench options]      e.g. --rows 20000000 --budget 64m
#
# Resolves the classpath once with the throwaway bench/comet/pom.xml (mvn dependency:build-
# classpath only; nothing is built), then runs CometSortBench.java with the JDK's single-file
# source launcher. The heap is fixed and pre-touched (-Xms=-Xmx=$HEAP, -XX:+AlwaysPreTouch) so
# heap growth cannot show up as RSS growth. Output: stdout (figures, plan); Spark/Comet log on
# stderr. Knobs (environment): JAVA (default java on PATH), HEAP (default 1g), NMT (off|summary:
# -XX:NativeMemoryTracking, so the program prints the JVM's own native growth over the job),
# NATIVEPOOL_JAR (nativepool's plugin jar for this Spark line, put on the classpath for
# --nativepool guard|noguard: its plugin beside the engine, as an operator deploys it).
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$DIR/out"
mkdir -p "$OUT"
JAVA="${JAVA:-java}"
HEAP="${HEAP:-1g}"
NMT="${NMT:-off}"

if [[ ! -s "$OUT/classpath.txt" || "$DIR/pom.xml" -nt "$OUT/classpath.txt" ]]; then
  mvn -B -q -f "$DIR/pom.xml" dependency:build-classpath -Dmdep.outputFile="$OUT/classpath.txt" >&2
fi

# Spark's Java 17 module options: the one copy is spark/spark-jvm.args (a java @argfile).
SPARK_JAVA_OPTS=("@$DIR/../../spark/spark-jvm.args")

echo "+ $JAVA ${SPARK_JAVA_OPTS[*]} -Xms$HEAP -Xmx$HEAP -XX:+AlwaysPreTouch -XX:NativeMemoryTracking=$NMT -cp \$(cat $OUT/classpath.txt)${NATIVEPOOL_JAR:+:$NATIVEPOOL_JAR} $DIR/CometSortBench.java $*" >&2
CP=$(cat "$OUT/classpath.txt")
if [[ -n ${NATIVEPOOL_JAR:-} ]]; then
  # After Comet's jar: Comet bundles its own org.apache.arrow.c, rewritten against its shaded
  # Arrow, which nativepool's unrelocated copy must not hide (docs/DEPLOYING.md, "Comet").
  CP="$CP:$NATIVEPOOL_JAR"
fi
exec "$JAVA" "${SPARK_JAVA_OPTS[@]}" \
  -Xms"$HEAP" -Xmx"$HEAP" -XX:+AlwaysPreTouch -XX:NativeMemoryTracking="$NMT" \
  -Dlog4j2.configurationFile="$DIR/log4j2.properties" \
  -Djava.io.tmpdir="${TMPDIR:-/tmp}" \
  -cp "$CP" \
  "$DIR/CometSortBench.java" "$@"
