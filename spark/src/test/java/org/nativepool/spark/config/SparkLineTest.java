package org.nativepool.spark.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The jar runs on the Spark line it was built for and refuses any other, naming both and the
 * artifact to deploy; the line's differences are told by the running Spark's version.
 */
class SparkLineTest {
  /** A jar of {@code line} and {@code scala} on Spark {@code spark}, Scala {@code scalaVersion}. */
  private static SparkLine built(String line, String scala, String spark, String scalaVersion) {
    String release =
        switch (line) {
          case "3.5" -> "3.5.9";
          case "4.0" -> "4.0.4";
          case "4.2" -> "4.2.0";
          case "4.3" -> "4.3.0";
          default -> "4.1.3";
        };
    String arrow =
        switch (line) {
          case "3.5" -> "12.0.1";
          case "4.0" -> "18.1.0";
          case "4.2", "4.3" -> "19.0.0";
          default -> "18.3.0";
        };
    return new SparkLine(line, scala, release, arrow, spark, scalaVersion);
  }

  /** The test classpath's stamp is the line Maven built, and that is the Spark the tests run on. */
  @Test
  void thisBuildsStampIsTheLineItRunsOn() {
    SparkLine current = SparkLine.current();
    assertNull(current.mismatch(), current::toString);
    String line = SparkLine.line(current.sparkVersion());
    assertTrue(
        current.artifact().startsWith("nativepool-spark-spark" + line + "_"), current::toString);
    assertTrue(SparkLine.LINES.containsKey(line), current::toString);
  }

  @Test
  void anyPatchReleaseOfTheLineIsTheLine() {
    assertNull(built("3.5", "2.12", "3.5.0", "2.12.18").mismatch());
    assertNull(built("4.1", "2.13", "4.1.0", "2.13.17").mismatch());
    assertNull(built("4.2", "2.13", "4.2.1-SNAPSHOT", null).mismatch(), "Scala unknown");
  }

  @Test
  void anotherSparkLineIsRefusedNamingBothAndTheArtifactToDeploy() {
    SparkLine l = built("4.1", "2.13", "3.5.9", "2.12.18");
    assertEquals(
        "nativepool: this plugin jar, nativepool-spark-spark4.1_2.13, is built for Spark 4.1 with"
            + " Scala 2.13 (4.1.3, Arrow 18.3.0), and cannot run on Spark 3.5.9 with Scala 2.12.18:"
            + " deploy nativepool-spark-spark3.5_2.12 instead (docs/DEPLOYING.md, \"Spark lines\")",
        l.mismatch());
    IllegalStateException e = assertThrows(IllegalStateException.class, l::requireBuiltLine);
    assertEquals(l.mismatch(), e.getMessage());
    assertTrue(
        built("3.5", "2.12", "4.2.0", "2.13.18")
            .mismatch()
            .endsWith("cannot run on Spark 4.2.0 with Scala 2.13.18: deploy"
                + " nativepool-spark-spark4.2_2.13 instead (docs/DEPLOYING.md, \"Spark lines\")"));
  }

  @Test
  void anotherScalaIsRefusedToo() {
    String m = built("3.5", "2.12", "3.5.9", "2.13.8").mismatch();
    assertTrue(
        m.contains("is built for Spark 3.5 with Scala 2.12 (3.5.9, Arrow 12.0.1), and cannot run"
            + " on Spark 3.5.9 with Scala 2.13.8: deploy nativepool-spark-spark3.5_2.13 instead"),
        m);
  }

  @Test
  void aSparkWithoutAnArtifactIsNamedAsSuch() {
    String m = built("3.5", "2.12", "3.4.4", "2.12.17").mismatch();
    assertTrue(m.contains("cannot run on Spark 3.4.4 with Scala 2.12.17: no nativepool artifact is"
        + " built for Spark 3.4 (the lines: Spark 3.5, 4.0, 4.1, 4.2, 4.3)"), m);
    m = built("4.0", "2.13", "4.0.4", "2.12.18").mismatch();
    assertTrue(m.contains("no nativepool artifact is built for Spark 4.0 with Scala 2.12"), m);
  }

  @Test
  void aJarWithoutItsStampIsRefused() {
    String m = new SparkLine(null, null, null, null, "4.1.3", "2.13.17").mismatch();
    assertTrue(
        m.startsWith("nativepool: the plugin jar has no Spark line in " + SparkLine.STAMP), m);
  }

  @Test
  void whatDiffersBetweenTheLines() {
    assertFalse(built("3.5", "2.12", "3.5.9", null).autoOverheadTakesEffect());
    assertFalse(built("4.0", "2.13", "4.0.4", null).autoOverheadTakesEffect());
    assertTrue(built("4.1", "2.13", "4.1.3", null).autoOverheadTakesEffect());
    assertTrue(built("4.2", "2.13", "4.2.0", null).autoOverheadTakesEffect());
    assertFalse(built("3.5", "2.13", "3.5.9", null).hasMinMemoryOverhead());
    assertTrue(built("4.0", "2.13", "4.0.0", null).hasMinMemoryOverhead());
  }

  /**
   * The bundled arrow-c-data's JNI library covers Linux on x86-64 on every line, and on aarch64
   * from Arrow 13 on: Arrow 12.0.1 (the 3.5 lines) has none there, which the executor says at its
   * start. Read from this build's classpath, which has the line's arrow-c-data.
   */
  @Test
  void theBundledArrowsJniLibraryCoversLinuxOnAarch64From40On() {
    SparkLine current = SparkLine.current();
    ClassLoader loader = getClass().getClassLoader();
    assertNull(current.arrowJniMissing("Linux", "amd64", loader));
    String aarch64 = current.arrowJniMissing("Linux", "aarch64", loader);
    boolean arrow12 = current.sparkVersion().startsWith("3.5.");
    assertEquals(arrow12, aarch64 != null, () -> current + ": " + aarch64);
    String none = current.arrowJniMissing("Linux", "aarch64", new ClassLoader(null) {});
    assertTrue(
        none.startsWith("nativepool: this jar's arrow-c-data ")
            && none.contains(" has no JNI library for Linux aarch_64 (libarrow_cdata_jni.so): "),
        none);
  }
}
