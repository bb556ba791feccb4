package org.nativepool.spark.driver;

import java.lang.management.ManagementFactory;
import java.util.List;
import org.apache.spark.SparkConf;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.CgroupLimit;
import org.nativepool.spark.config.GuardSettings;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.config.SettingsCheck;
import org.nativepool.spark.config.SparkLine;
import org.nativepool.spark.ledger.LedgerSnapshot;

/**
 * The one line the driver logs when the plugin starts, at WARN so that it shows at spark-shell's
 * default level, where INFO lines do not: which nativepool and Spark line run, the native budget,
 * the pod guard's limit (or that it has none), where the Native Memory page is, and, when the
 * executors run without Native Memory Tracking, that the JVM's own native memory will show as
 * unexplained and what turning it on would cost. For example:
 *
 * <pre>
 * nativepool 0.1.0 (nativepool-spark-spark4.1_2.13 on Spark 4.1.3): native budget 256.0 MiB of
 * off-heap memory per executor, fair_unified pools of at most 256.0 MiB per task; pod guard auto:
 * limit 4.0 GiB (this JVM's memory cgroup); Native Memory page http://host:4040/nativememory/;
 * Native Memory Tracking off: ...
 * </pre>
 *
 * Stateless.
 */
final class StartupLine {
  private StartupLine() {}

  /**
   * The line.
   *
   * @param conf the application's configuration
   * @param settings its settings, checked
   * @param line the plugin jar's Spark line
   * @param release the nativepool release
   * @param uiUrl the driver's web UI address ({@code http://host:4040}), or null without a UI
   */
  static String of(
      SparkConf conf, SettingsCheck settings, SparkLine line, String release, String uiUrl) {
    boolean local = conf.get("spark.master", "").startsWith("local");
    StringBuilder b = new StringBuilder("nativepool ");
    b.append(release)
        .append(" (")
        .append(line.artifact())
        .append(" on Spark ")
        .append(line.sparkVersion())
        .append("): ");
    boolean offHeap = conf.getBoolean("spark.memory.offHeap.enabled", false);
    long offHeapSize = conf.getSizeAsBytes("spark.memory.offHeap.size", "0");
    if (offHeap && offHeapSize > 0) {
      b.append("native budget ")
          .append(Bytes.format(offHeapSize))
          .append(" of off-heap memory per executor, ");
      if (settings.pool().kind() == PoolKind.FAIR_UNIFIED) {
        b.append("fair_unified pools of at most ")
            .append(Bytes.format(settings.pool().poolSize()))
            .append(" per task");
      } else {
        b.append(settings.pool().kind()).append(" pools");
      }
    } else {
      b.append("no native budget (no off-heap memory: every native grow is refused)");
    }
    b.append("; ").append(guard(settings.guard(), local)).append("; ");
    if (uiUrl != null) {
      b.append("Native Memory page ").append(uiUrl).append("/nativememory/");
    } else {
      b.append("no live Native Memory page (the UI is off; a History Server shows it from the")
          .append(" event log)");
    }
    if (!nmtOn(conf, local)) {
      b.append("; Native Memory Tracking off: the JVM's own native memory will show as")
          .append(" unexplained in the executor memory ledger; ")
          .append(LedgerSnapshot.NMT_HINT);
    }
    return b.toString();
  }

  /** The pod guard's limit in words: the limit it keeps, or that it has none. */
  static String guard(GuardSettings g, boolean local) {
    if (!g.enabled()) {
      return "pod guard off (" + NativePoolConf.GUARD_ENABLED.key() + "=false)";
    }
    String head = "pod guard " + g.mode().word() + ": ";
    long cgroup = local ? CgroupLimit.of() : -1;
    if (g.limit() > 0) {
      long tight = cgroup > 0 && g.limitExplicit() ? Math.min(cgroup, g.limit()) : g.limit();
      return head
          + "limit "
          + Bytes.format(tight)
          + (tight == g.limit() ? " (" + g.limitOrigin() + ")" : " (this JVM's memory cgroup)")
          + (local || g.limitExplicit()
              ? ""
              : ", or each executor's memory cgroup limit where it has one");
    }
    if (local) {
      return cgroup > 0
          ? head + "limit " + Bytes.format(cgroup) + " (this JVM's memory cgroup)"
          : head + "no limit (no memory cgroup limit, and Spark sizes no container here)";
    }
    return head
        + "each executor's memory cgroup limit where it has one, else no limit (Spark sizes no"
        + " container on this master; "
        + NativePoolConf.GUARD_LIMIT.key()
        + " sets one)";
  }

  /**
   * Whether the executors run with Native Memory Tracking: in local mode this JVM, else {@code
   * spark.executor.extraJavaOptions} or {@code spark.executor.defaultJavaOptions}.
   */
  static boolean nmtOn(SparkConf conf, boolean local) {
    if (local) {
      List<String> args = ManagementFactory.getRuntimeMXBean().getInputArguments();
      return args.stream().anyMatch(StartupLine::nmtFlag);
    }
    String opts =
        conf.get("spark.executor.defaultJavaOptions", "")
            + " "
            + conf.get("spark.executor.extraJavaOptions", "");
    for (String a : opts.split("\\s+")) {
      if (nmtFlag(a)) {
        return true;
      }
    }
    return false;
  }

  private static boolean nmtFlag(String arg) {
    return arg.equals("-XX:NativeMemoryTracking=summary")
        || arg.equals("-XX:NativeMemoryTracking=detail");
  }
}
