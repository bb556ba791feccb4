package org.nativepool.spark.config;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;

/**
 * Every {@code spark.nativepool.*} setting of an application checked at once, where a bad one can
 * still fail fast: the driver plugin runs it when the SparkContext starts, before any executor
 * exists, so that a value that does not parse, is out of range or contradicts another key fails the
 * application with one message naming the key, the value and the rule (what the ledger alone knows,
 * its parts and listener classes, the driver checks beside it). What it finds worth saying but not
 * refusing comes back as {@link #warnings()}, which the driver logs at WARN:
 *
 * <ul>
 *   <li>a key under {@value NativePoolConf#PREFIX} the registry does not know (a misspelling, a
 *       wrong case), which Spark would pass on and the plugin ignore, naming the closest known key;
 *   <li>an off-heap floor of the pod guard at or above the off-heap size, so that the guard can
 *       hold none of Spark's off-heap memory;
 *   <li>a budget no native grow can get: off-heap memory disabled, or of size 0. Native pools
 *       borrow Spark's off-heap execution memory, so every grow would be refused; but the ledger,
 *       the Native Memory page, the pod guard and the diagnosis of lost executors work without it,
 *       so a job using the plugin only for those is not refused.
 * </ul>
 *
 * <p>Refused, beyond each key's own parser: a {@code fair_unified} pool of 0 bytes ({@link
 * NativePoolConf#POOL_SIZE} set to 0), which refuses every grow, and which no deployment wants.
 *
 * <p>Immutable.
 */
public final class SettingsCheck {
  private final PoolSettings pool;
  private final ReportingSettings reporting;
  private final GuardSettings guard;
  private final LedgerSettings ledger;
  private final List<String> warnings;

  private SettingsCheck(
      PoolSettings pool,
      ReportingSettings reporting,
      GuardSettings guard,
      LedgerSettings ledger,
      List<String> warnings) {
    this.pool = pool;
    this.reporting = reporting;
    this.guard = guard;
    this.ledger = ledger;
    this.warnings = List.copyOf(warnings);
  }

  /**
   * Checks every setting of {@code conf}: each key of the registry parses ({@link ConfigKey#read}),
   * and the settings views that combine keys accept them.
   *
   * @throws IllegalArgumentException naming the key, the value and the rule, for the first setting
   *     that fails
   */
  public static SettingsCheck of(SparkConf conf) {
    for (ConfigKey<?> k : NativePoolConf.all()) {
      k.read(conf); // every key, also one no view below reads yet
    }
    PoolSettings pool = PoolSettings.fromConf(conf);
    ReportingSettings reporting = ReportingSettings.fromConf(conf);
    GuardSettings guard = GuardSettings.fromConf(conf);
    LedgerSettings ledger = LedgerSettings.fromConf(conf);
    HeapHolderSettings.fromConf(conf);
    if (pool.kind() == PoolKind.FAIR_UNIFIED
        && conf.contains(NativePoolConf.POOL_SIZE.key())
        && pool.poolSize() == 0) {
      throw new IllegalArgumentException(
          "nativepool: "
              + NativePoolConf.POOL_SIZE.key()
              + " = '"
              + conf.get(NativePoolConf.POOL_SIZE.key())
              + "': a fair_unified pool of 0 bytes refuses every grow (\"the fair limit is 0"
              + " bytes\"); must be > 0, or unset for spark.memory.offHeap.size");
    }
    List<String> warnings = new ArrayList<>();
    for (String k : NativePoolConf.unknownKeys(conf)) {
      warnings.add(NativePoolConf.unknownKeyWarning(k));
    }
    String budget = budgetWarning(conf);
    if (budget != null) {
      warnings.add(budget);
    }
    long offHeap = conf.getSizeAsBytes("spark.memory.offHeap.size", "0");
    if (guard.enabled()
        && guard.offHeap()
        && guard.offHeapFloor() != null
        && offHeap > 0
        && guard.offHeapFloor() >= offHeap) {
      warnings.add(
          "nativepool: "
              + NativePoolConf.GUARD_OFF_HEAP_FLOOR.key()
              + " = '"
              + conf.get(NativePoolConf.GUARD_OFF_HEAP_FLOOR.key())
              + "' is not below spark.memory.offHeap.size ("
              + Bytes.format(offHeap)
              + "): the pod guard will leave Spark's consumers all of it and hold none, so only"
              + " native consumers give way when the headroom is short");
    }
    return new SettingsCheck(pool, reporting, guard, ledger, warnings);
  }

  /**
   * The warning for an executor without off-heap memory, where every native grow is refused; null
   * when there is off-heap memory to borrow.
   */
  static String budgetWarning(SparkConf conf) {
    boolean enabled = conf.getBoolean("spark.memory.offHeap.enabled", false);
    long size = conf.getSizeAsBytes("spark.memory.offHeap.size", "0");
    String what;
    if (!enabled) {
      what =
          "spark.memory.offHeap.enabled is "
              + (conf.contains("spark.memory.offHeap.enabled")
                  ? "'" + conf.get("spark.memory.offHeap.enabled") + "'"
                  : "unset (false)");
    } else if (size == 0) {
      what = "spark.memory.offHeap.size is 0";
    } else {
      return null;
    }
    return "nativepool: "
        + what
        + ": native pools borrow Spark's off-heap execution memory, and there is none, so every"
        + " native grow will be refused (\"the fair limit is 0 bytes\") and every tryGrow will"
        + " return false. The executor memory ledger, the Native Memory page, the pod guard and the"
        + " diagnosis of lost executors work without it. For native operators, set"
        + " spark.memory.offHeap.enabled=true and spark.memory.offHeap.size to their budget";
  }

  /** The task pools' settings. */
  public PoolSettings pool() {
    return pool;
  }

  /** The reporting settings. */
  public ReportingSettings reporting() {
    return reporting;
  }

  /** The pod guard's settings, resolved for this configuration's master. */
  public GuardSettings guard() {
    return guard;
  }

  /** The executor memory ledger's settings (its parts and listeners not checked here). */
  public LedgerSettings ledger() {
    return ledger;
  }

  /** What the check found worth a WARN but not a refusal, one line each. */
  public List<String> warnings() {
    return warnings;
  }
}
