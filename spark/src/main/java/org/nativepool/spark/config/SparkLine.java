package org.nativepool.spark.config;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * The Spark line this plugin jar was built for, the Spark it runs on, and what differs between the
 * lines at run time: the plugin's version shim, the one place that knows Spark versions.
 *
 * <p><b>Built for.</b> Each Spark line has its own artifact, {@code
 * nativepool-spark-spark<line>_<scala>} (the line profiles of the root {@code pom.xml}), which
 * bundles the {@code arrow-c-data} of that line's Arrow. Maven stamps the line into the jar
 * ({@value #STAMP}: {@code spark.line}, {@code spark.version}, {@code scala.binary.version},
 * {@code arrow.version}).
 *
 * <p><b>Running on.</b> {@code org.apache.spark.SPARK_VERSION}, and Scala's {@code
 * scala.util.Properties.versionNumberString}, read by reflection: the plugin's classes name no
 * class of the Scala library, so that the same sources build for Scala 2.12 and 2.13.
 *
 * <p>A jar runs only on the line it was built for: the same Spark major.minor and the same Scala
 * binary version (any patch release of the line). On another line its bundled Arrow does not match
 * Spark's (Arrow 18's {@code arrow-c-data} needs classes Spark 3.5's Arrow 12 lacks), so instead of
 * a {@code NoClassDefFoundError} in some task later, {@link #mismatch()} names both lines and the
 * artifact to deploy: the driver fails the SparkContext with it, an executor refuses every task
 * with it.
 *
 * <p>What differs between the lines, each a method here: {@link #autoOverheadTakesEffect()} (the
 * order in which SparkContext builds the default ResourceProfile and loads plugins), {@link
 * #hasMinMemoryOverhead()} (a setting Spark 3.5 does not have) and {@link #arrowJniMissing()} (the
 * platforms the bundled Arrow's JNI library covers). Immutable.
 */
public final class SparkLine {
  /** The jar's stamp: the nativepool release and the Spark line it was built for. */
  public static final String STAMP = "org/nativepool/native/version.properties";

  /** The lines an artifact is built for: Spark major.minor → its Scala binary versions. */
  public static final Map<String, List<String>> LINES =
      Map.of(
          "3.5", List.of("2.12", "2.13"),
          "4.0", List.of("2.13"),
          "4.1", List.of("2.13"),
          "4.2", List.of("2.13"),
          "4.3", List.of("2.13"));

  private static volatile SparkLine current;

  private final String builtLine;
  private final String builtScala;
  private final String builtSpark;
  private final String builtArrow;
  private final String sparkVersion;
  private final String scalaVersion;

  /**
   * @param builtLine the jar's Spark line ({@code 3.5}), or null when the jar has no stamp
   * @param builtScala the jar's Scala binary version ({@code 2.12})
   * @param builtSpark the Spark release the jar was built and tested with ({@code 3.5.9})
   * @param builtArrow the Arrow version of its bundled {@code arrow-c-data}
   * @param sparkVersion the running Spark's version
   * @param scalaVersion the running Scala's version ({@code 2.12.18}), or null if unknown
   */
  SparkLine(
      String builtLine,
      String builtScala,
      String builtSpark,
      String builtArrow,
      String sparkVersion,
      String scalaVersion) {
    this.builtLine = builtLine;
    this.builtScala = builtScala;
    this.builtSpark = builtSpark;
    this.builtArrow = builtArrow;
    this.sparkVersion = sparkVersion;
    this.scalaVersion = scalaVersion;
  }

  /** This jar's line and the Spark of this JVM, read once. */
  public static SparkLine current() {
    SparkLine l = current;
    if (l == null) {
      Properties stamp = stamp();
      l =
          new SparkLine(
              stamped(stamp, "spark.line"),
              stamped(stamp, "scala.binary.version"),
              stamped(stamp, "spark.version"),
              stamped(stamp, "arrow.version"),
              org.apache.spark.package$.MODULE$.SPARK_VERSION(),
              runningScala());
      current = l;
    }
    return l;
  }

  /**
   * Why this jar cannot run on this Spark, naming both lines and the artifact to deploy; null when
   * it is the jar's line.
   */
  public String mismatch() {
    String running = line(sparkVersion);
    String runningScala = scalaVersion == null ? null : line(scalaVersion);
    if (builtLine == null || builtScala == null) {
      return "nativepool: the plugin jar has no Spark line in "
          + STAMP
          + " (built without Maven's filtering?); build it with make jar SPARK=<line>";
    }
    if (builtLine.equals(running) && (runningScala == null || builtScala.equals(runningScala))) {
      return null;
    }
    StringBuilder m =
        new StringBuilder("nativepool: this plugin jar, ")
            .append(artifact(builtLine, builtScala))
            .append(", is built for Spark ")
            .append(builtLine)
            .append(" with Scala ")
            .append(builtScala)
            .append(" (")
            .append(builtSpark)
            .append(", Arrow ")
            .append(builtArrow)
            .append("), and cannot run on Spark ")
            .append(sparkVersion);
    if (scalaVersion != null) {
      m.append(" with Scala ").append(scalaVersion);
    }
    List<String> scalas = LINES.get(running);
    if (scalas == null) {
      m.append(": no nativepool artifact is built for Spark ")
          .append(running)
          .append(" (the lines: Spark ")
          .append(String.join(", ", LINES.keySet().stream().sorted().toList()))
          .append(")");
    } else if (runningScala != null && !scalas.contains(runningScala)) {
      m.append(": no nativepool artifact is built for Spark ")
          .append(running)
          .append(" with Scala ")
          .append(runningScala);
    } else {
      String scala = runningScala != null ? runningScala : scalas.get(scalas.size() - 1);
      m.append(": deploy ").append(artifact(running, scala)).append(" instead");
    }
    return m.append(" (docs/DEPLOYING.md, \"Spark lines\")").toString();
  }

  /**
   * Throws {@link #mismatch()} when this jar is not built for this Spark.
   *
   * @throws IllegalStateException naming both lines
   */
  public void requireBuiltLine() {
    String m = mismatch();
    if (m != null) {
      throw new IllegalStateException(m);
    }
  }

  /**
   * Whether {@code spark.executor.memoryOverhead} set in {@code DriverPlugin.init} reaches the
   * executors' containers: from Spark 4.1 on SparkContext loads plugins before it builds the
   * default ResourceProfile from its configuration; Spark 3.5 and 4.0 build the profile first, so
   * a value set by a plugin is never used.
   */
  public boolean autoOverheadTakesEffect() {
    return atLeast(4, 1);
  }

  /**
   * Whether Spark has {@code spark.executor.minMemoryOverhead} and {@code
   * spark.driver.minMemoryOverhead} (4.0 on); before, the minimum is a fixed 384 MiB.
   */
  public boolean hasMinMemoryOverhead() {
    return atLeast(4, 0);
  }

  /**
   * Why the bundled {@code arrow-c-data} cannot move Arrow batches on this JVM's platform, or null
   * when it can: its JNI library must be on the classpath where Arrow's loader looks for it
   * ({@code arrow_cdata_jni/<arch>/} from Arrow 13 on, {@code <arch>/} before). Arrow 12.0.1, the
   * Spark 3.5 lines', has none for Linux on aarch64.
   */
  public String arrowJniMissing() {
    if (System.getProperty("arrow.cdata.library.path") != null) {
      return null; // Arrow 19's loader takes the library from there
    }
    return arrowJniMissing(
        System.getProperty("os.name", ""),
        System.getProperty("os.arch", ""),
        SparkLine.class.getClassLoader());
  }

  String arrowJniMissing(String osName, String osArch, ClassLoader loader) {
    String os = osName.toLowerCase(Locale.ROOT);
    String lib;
    if (os.startsWith("linux")) {
      lib = "libarrow_cdata_jni.so";
    } else if (os.startsWith("mac")) {
      lib = "libarrow_cdata_jni.dylib";
    } else if (os.startsWith("windows")) {
      lib = "arrow_cdata_jni.dll";
    } else {
      return null; // a platform Arrow's loader does not name either
    }
    String arch =
        switch (osArch.toLowerCase(Locale.ROOT)) {
          case "amd64", "x86_64" -> "x86_64";
          case "aarch64" -> "aarch_64";
          default -> osArch.toLowerCase(Locale.ROOT);
        };
    if (loader.getResource("arrow_cdata_jni/" + arch + "/" + lib) != null
        || loader.getResource(arch + "/" + lib) != null) {
      return null;
    }
    return "nativepool: this jar's arrow-c-data "
        + builtArrow
        + " has no JNI library for "
        + osName
        + " "
        + arch
        + " ("
        + lib
        + "): Arrow batches through the C Data Interface (arrow.GoBatch) fail on this JVM; native"
        + " pools and reservations work (docs/DEPLOYING.md, \"Spark lines\")";
  }

  /** The running Spark's version. */
  public String sparkVersion() {
    return sparkVersion;
  }

  /** This jar's artifact name, {@code nativepool-spark-spark<line>_<scala>}. */
  public String artifact() {
    return artifact(builtLine, builtScala);
  }

  @Override
  public String toString() {
    return artifact()
        + " (built with Spark "
        + builtSpark
        + ", Arrow "
        + builtArrow
        + ") on Spark "
        + sparkVersion
        + (scalaVersion == null ? "" : " with Scala " + scalaVersion);
  }

  /** Whether the running Spark is {@code major.minor} or later. */
  private boolean atLeast(int major, int minor) {
    int[] v = majorMinor(sparkVersion);
    return v[0] > major || (v[0] == major && v[1] >= minor);
  }

  static String artifact(String line, String scala) {
    return "nativepool-spark-spark" + line + "_" + scala;
  }

  /** {@code major.minor} of a version ({@code 3.5.9} → {@code 3.5}). */
  static String line(String version) {
    int[] v = majorMinor(version);
    return v[0] + "." + v[1];
  }

  private static int[] majorMinor(String version) {
    String[] p = version.split("[.\\-]", 3);
    try {
      return new int[] {Integer.parseInt(p[0]), p.length > 1 ? Integer.parseInt(p[1]) : 0};
    } catch (NumberFormatException e) {
      return new int[] {0, 0};
    }
  }

  /** The jar's stamp (empty when missing or unreadable: then it has no line). */
  private static Properties stamp() {
    Properties p = new Properties();
    try (InputStream in = SparkLine.class.getClassLoader().getResourceAsStream(STAMP)) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      // no line: mismatch() says so
    }
    return p;
  }

  /** A stamped value, or null when missing or left unfiltered. */
  private static String stamped(Properties stamp, String key) {
    String v = stamp.getProperty(key);
    return v == null || v.isEmpty() || v.startsWith("${") ? null : v;
  }

  /** The running Scala's version, by reflection (see the class comment); null if unknown. */
  private static String runningScala() {
    try {
      return (String)
          Class.forName("scala.util.Properties").getMethod("versionNumberString").invoke(null);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }
}
