package org.nativepool.spark.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import org.apache.spark.SparkConf;
import org.apache.spark.network.util.JavaUtils;
import org.nativepool.spark.config.ConfigKey.Side;
import scala.Tuple2;

/**
 * Every {@code spark.nativepool.*} key the plugin reads, each declared once with its default, unit,
 * documentation, side and parser, as Comet's {@code CometConf} declares its keys. The settings
 * views read their values from here, and the configuration table of docs/CONFIGURATION.md is
 * rendered from here ({@link #markdownTable()}; a test fails if the copy there differs). The driver
 * checks every key of an application against this registry when it starts ({@link SettingsCheck}).
 * A key that was replaced
 * stays readable as its successor's {@link ConfigKey#deprecatedKey()}, with a warning, so a setting
 * never silently stops working.
 *
 * <p>Immutable; holds no state.
 */
public final class NativePoolConf {
  private NativePoolConf() {}

  private static final List<ConfigKey<?>> KEYS = new ArrayList<>();

  private static <T> ConfigKey<T> key(
      String key,
      String defaultText,
      String defaultDoc,
      String unit,
      Side side,
      Function<String, T> parser,
      String doc) {
    return key(key, defaultText, defaultDoc, unit, side, parser, doc, null);
  }

  private static <T> ConfigKey<T> key(
      String key,
      String defaultText,
      String defaultDoc,
      String unit,
      Side side,
      Function<String, T> parser,
      String doc,
      String deprecatedKey) {
    ConfigKey<T> k =
        new ConfigKey<>(key, defaultText, defaultDoc, unit, doc, side, parser, deprecatedKey);
    KEYS.add(k);
    return k;
  }

  /**
   * The key that meant both reserved-bytes thresholds: one task pool's (logged by the Go side) and
   * one executor's (events on the driver). Still read, with a warning, as each of {@link
   * #TASK_RESERVED_THRESHOLDS} and {@link #EXECUTOR_RESERVED_THRESHOLDS} that is unset.
   */
  public static final String DEPRECATED_THRESHOLDS = "spark.nativepool.thresholds";

  // ---- loading ----

  /**
   * The JVM system property that names the library when {@link #LIBRARY} is unset: for a JVM whose
   * Spark configuration the operator cannot change per process (an executor's {@code
   * extraJavaOptions}).
   */
  public static final String LIBRARY_PROPERTY = "nativepool.library";

  /** Path of the library to load; null (unset): the copy the plugin jar carries. */
  public static final ConfigKey<String> LIBRARY =
      key(
          "spark.nativepool.library",
          null,
          "unset: the jar's copy",
          "path",
          Side.BOTH,
          v -> v == null || v.isEmpty() ? null : v,
          "the `libnativepool.so` to load, or your engine's own c-shared library that links"
              + " nativepool; unset = the JVM system property `nativepool.library` if set (e.g. in"
              + " `spark.executor.extraJavaOptions`), else the copy the plugin jar carries for the"
              + " executor's platform, extracted to a per-process directory under"
              + " `java.io.tmpdir`. Whatever the"
              + " source, the library must report the jar's version, or the executor disables"
              + " native pools and every task asking for one fails with the reason");

  /** Whether the driver loads and checks the library at startup. */
  public static final ConfigKey<Boolean> DRIVER_CHECK =
      key(
          "spark.nativepool.driverCheck",
          "true",
          "`true`",
          "boolean",
          Side.DRIVER,
          NativePoolConf::bool,
          "the driver loads and checks the library at startup, so a missing or mismatched"
              + " library fails the application once; `false` when the driver cannot see the"
              + " executors' `spark.nativepool.library` path");

  // ---- task pools ----

  /** The kind of each task's pool. */
  public static final ConfigKey<PoolKind> POOL =
      key(
          "spark.nativepool.pool",
          "fair_unified",
          "`fair_unified`",
          "`fair_unified` \\| `greedy_unified`",
          Side.EXECUTOR,
          PoolKind::parse,
          "the kind of each task's pool: `fair_unified` divides its pool size among the task's"
              + " spillable consumers (DataFusion's fair share, per consumer); `greedy_unified`"
              + " lets any consumer take what Spark grants");

  /** Bytes a task pool borrows from Spark at a time; 0 = exact. */
  public static final ConfigKey<Long> CHUNK_SIZE =
      key(
          "spark.nativepool.chunkSize",
          "8m",
          "`8m`",
          "size",
          Side.EXECUTOR,
          Bytes::parse,
          "what a task pool borrows from Spark's `TaskMemoryManager` at a time: the largest"
              + " chunk, used once the pool reserves 64 MiB or more (1 MiB under 16 MiB, 4 MiB"
              + " under 64 MiB, never more than this); a pool keeps at most 2 chunks of slack."
              + " `0` = exact: one Spark call per grow and per shrink (Comet's behaviour)");

  /** The fair_unified pool size; null (unset): {@code spark.memory.offHeap.size}. */
  public static final ConfigKey<Long> POOL_SIZE =
      key(
          "spark.nativepool.poolSize",
          null,
          "`spark.memory.offHeap.size`",
          "size",
          Side.EXECUTOR,
          v -> v == null ? null : Bytes.parse(v),
          "the size of each task's `fair_unified` pool: the most its consumers may reserve"
              + " together, and the base of each spillable consumer's fair share (Spark's"
              + " 1/2N–1/N rules apply on top); ignored by `greedy_unified`");

  /** The largest {@link #RESERVATION_SLACK}, so that twice it and its rounding cannot overflow. */
  public static final long MAX_RESERVATION_SLACK = 1L << 40;

  /** The local-slack quantum Q of Java reservations. */
  public static final ConfigKey<Long> RESERVATION_SLACK =
      key(
          "spark.nativepool.reservationSlack",
          "64k",
          "`64k`",
          "size",
          Side.EXECUTOR,
          v -> atMost(Bytes.parse(v), MAX_RESERVATION_SLACK, "above 1 TiB"),
          "the local-slack quantum Q of each Java `Reservation` of a task pool opened through"
              + " the plugin: a grow crossing into Go asks for a multiple of Q, and up to 2Q"
              + " bytes stay in Java after shrinks, so small grows and shrinks never cross JNI;"
              + " after a shrink leaves more than 2Q, all but Q goes back to Go. Chunked pools"
              + " only (`chunkSize` > 0; exact pools keep none). `0` = none. At most 1 TiB");

  /** Levels of a task pool's reserved bytes that the Go side logs crossings of. */
  public static final ConfigKey<long[]> TASK_RESERVED_THRESHOLDS =
      key(
          "spark.nativepool.task.reservedThresholds",
          "",
          "empty",
          "comma-separated sizes",
          Side.EXECUTOR,
          NativePoolConf::positiveSizes,
          "levels of one task pool's reserved bytes: crossing one upwards logs a warning on"
              + " `org.nativepool.bridge`, and falling back below it (less 1/16 of the level)"
              + " logs another. Each > 0; pools opened afterwards. Unset: the deprecated"
              + " `spark.nativepool.thresholds`, if set",
          DEPRECATED_THRESHOLDS);

  /** Levels of an executor's reserved bytes that the driver posts crossing events for. */
  public static final ConfigKey<long[]> EXECUTOR_RESERVED_THRESHOLDS =
      key(
          "spark.nativepool.executor.reservedThresholds",
          "",
          "empty",
          "comma-separated sizes",
          Side.DRIVER,
          NativePoolConf::positiveSizes,
          "levels of one executor's reserved bytes (all its task pools together): the driver"
              + " posts a `ReservedThresholdEvent` to the event log when an executor's sampled"
              + " peak crosses one upwards, and when its reserved bytes fall back below it. Each"
              + " > 0. Unset: the deprecated `spark.nativepool.thresholds`, if set",
          DEPRECATED_THRESHOLDS);

  /** Whether each task pool is wrapped in the Logging decorator. */
  public static final ConfigKey<Boolean> LOGGING =
      key(
          "spark.nativepool.logging",
          "false",
          "`false`",
          "boolean",
          Side.EXECUTOR,
          NativePoolConf::bool,
          "wraps each task pool in the Logging decorator: one record per register, unregister,"
              + " grow, shrink and try_grow, at INFO (a refused try_grow at WARN), on"
              + " `org.nativepool.pool`, whose log4j level must let INFO through");

  /** The level names {@link #LOG_LEVEL} accepts, lowest first. */
  public static final List<String> LOG_LEVELS =
      List.of("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF");

  /** The level of the {@code org.nativepool} loggers; null (unset): log4j's configuration. */
  public static final ConfigKey<String> LOG_LEVEL =
      key(
          "spark.nativepool.logLevel",
          null,
          "unset: log4j's configuration",
          "`TRACE` … `ERROR`, `OFF`",
          Side.EXECUTOR,
          NativePoolConf::logLevel,
          "sets `org.nativepool` and every logger below it (the Go side's and the plugin's) to"
              + " this level in log4j when the plugin starts, over log4j's own configuration for"
              + " them (needs log4j 2, Spark's SLF4J backend; with another, logged and ignored)."
              + " See docs/OBSERVING.md, \"Logs\"");

  /** Whether Go Arrow allocators and Java reservations record their allocation sites. */
  public static final ConfigKey<Boolean> ALLOCATION_SITES =
      key(
          "spark.nativepool.allocationSites",
          "false",
          "`false`",
          "boolean",
          Side.EXECUTOR,
          NativePoolConf::bool,
          "Go Arrow allocators made afterwards record the stack of every allocation, so leak"
              + " reports group live buffers by allocating function (a stack walk per"
              + " allocation): the first Go frame outside nativepool, or, for a copy entered from"
              + " Java, the Java caller; reservations record the Java method that created them,"
              + " so a leak names it (`Leaks`, `LiveNative`)");

  // ---- process memory ----

  /** The largest {@link #MALLOC_MMAP_THRESHOLD} glibc accepts on 64-bit. */
  public static final long MAX_MALLOC_MMAP_THRESHOLD = 32L << 20;

  /** glibc's {@code M_MMAP_THRESHOLD}, set with {@code mallopt}; 0 leaves glibc alone. */
  public static final ConfigKey<Long> MALLOC_MMAP_THRESHOLD =
      key(
          "spark.nativepool.mallocMmapThreshold",
          "128k",
          "`128k`",
          "size, ≤ `32m`",
          Side.EXECUTOR,
          v -> atMost(Bytes.parse(v), MAX_MALLOC_MMAP_THRESHOLD, "above glibc's maximum of 32 MiB"),
          "glibc's `M_MMAP_THRESHOLD`, set with `mallopt` when the plugin starts: blocks of this"
              + " size or more (Spark's 1 MiB Tungsten pages, Netty's chunks, every large `malloc`"
              + " in the process) are mmapped and unmapped on free, and glibc's dynamic"
              + " threshold, which rises up to 32 MiB after large frees and then keeps freed"
              + " memory resident, stays off; the trim threshold, which the dynamic adjustment"
              + " may already have raised to 64 MiB, goes back to glibc's default 128 KiB (the"
              + " state `MALLOC_MMAP_THRESHOLD_=131072` gives a process from its start). `0`"
              + " leaves glibc alone; a `MALLOC_MMAP_THRESHOLD_` in the executor's environment"
              + " wins (logged). Cost: a fresh block's pages are faulted in on every use"
              + " (`bench/RESULTS.md`)");

  /** {@link PoolSettings#goMemoryLimit()} when {@link #GO_MEMORY_LIMIT} is unset: derived in Go. */
  public static final long GO_MEMORY_LIMIT_DERIVED = -1;

  /** The Go runtime's soft memory limit; -1 (unset): derived; 0 ({@code off}): none. */
  public static final ConfigKey<Long> GO_MEMORY_LIMIT =
      key(
          "spark.nativepool.goMemoryLimit",
          null,
          "unset: derived",
          "size, or `off`",
          Side.EXECUTOR,
          v ->
              v == null || v.isEmpty()
                  ? GO_MEMORY_LIMIT_DERIVED
                  : v.equalsIgnoreCase("off") ? 0L : Bytes.parse(v),
          "the Go runtime's soft memory limit (`debug.SetMemoryLimit`); unset = the Go baseline"
              + " measured at load + memoryOverhead / 8; `0` or `off` leaves the Go runtime alone"
              + " (`GOMEMLIMIT` applies). memoryOverhead is the executor's, as Spark sizes its"
              + " container (`MemoryOverhead`): `spark.executor.memoryOverhead`, else"
              + " max(`spark.executor.minMemoryOverhead` (384m),"
              + " `spark.executor.memoryOverheadFactor` (0.10) × `spark.executor.memory`); in"
              + " local mode the driver's");

  // ---- the pod guard ----

  /** Whether the pod guard runs: {@code auto}, {@code true} or {@code false}. */
  public static final ConfigKey<GuardMode> GUARD_ENABLED =
      key(
          "spark.nativepool.guard.enabled",
          "auto",
          "`auto`",
          "`auto`, `true` or `false`",
          Side.EXECUTOR,
          GuardMode::parse,
          "the pod guard (docs/DEPLOYING.md, \"The pod guard\"): keeps native memory from getting"
              + " the executor killed at its memory limit by memory the JVM takes outside any"
              + " accounting (direct buffers, Netty chunks, spill readers). It samples what the"
              + " kernel cannot reclaim (clean page cache never counts); when the headroom under"
              + " the limit falls below `spark.nativepool.guard.reserve`, native consumers spill"
              + " across every task pool first, then every other consumer of Spark's off-heap"
              + " memory gives way (`spark.nativepool.guard.offHeap`), and what they free stays"
              + " held from Spark until the headroom is back; each such episode is logged at WARN"
              + " on"
              + " `org.nativepool.spark.executor.ExecutorReporter` and posted to the event log"
              + " (`GuardEpisodeEvent`). `auto`: on where the executor's memory cgroup has a"
              + " limit, and on YARN and Kubernetes (`spark.master` `yarn`, `k8s://…`), which"
              + " size the executor's container, where without a cgroup limit it keeps the"
              + " container size against the resident set; in local mode and standalone only"
              + " under a cgroup limit. `true`: on, with the container size as the limit"
              + " wherever no cgroup limit is found. `false`: off");

  /** The headroom the pod guard keeps free; 0 (unset): 2% of the limit, at least 32 MiB. */
  public static final ConfigKey<Long> GUARD_RESERVE =
      key(
          "spark.nativepool.guard.reserve",
          null,
          "unset: 2% of the limit, at least 32 MiB",
          "size",
          Side.EXECUTOR,
          v -> v == null || v.isEmpty() ? 0L : Bytes.parse(v),
          "the headroom the pod guard keeps free under the limit: a native borrow from Spark"
              + " that would eat into it (or into the half reserve above it) waits while native"
              + " consumers spill, and native consumers spill when memory outside native memory"
              + " takes it. It is there because"
              + " a burst arrives faster than any reaction: a 16 MiB burst killed an executor at"
              + " its survival point within 0.1 s, and 32 MiB is two of the 16 MiB Netty chunks"
              + " Spark's shuffle and spill readers allocate at once; 2% scales it with larger"
              + " executors, whose bursts come from more threads at once. Must be below the"
              + " limit: the driver refuses one not below `spark.nativepool.guard.limit` when the"
              + " application starts, and an executor whose memory cgroup's limit is at or below"
              + " it fails its start");

  /** The limit the pod guard keeps without a cgroup limit; null (unset): the container size. */
  public static final ConfigKey<Long> GUARD_LIMIT =
      key(
          "spark.nativepool.guard.limit",
          null,
          "unset: the container size",
          "size",
          Side.EXECUTOR,
          v -> v == null || v.isEmpty() ? null : positiveLimit(Bytes.parse(v)),
          "the memory limit the pod guard keeps where the executor's memory cgroup sets none,"
              + " held against the process's resident anonymous and shared memory (what YARN's"
              + " process-tree check counts). Unset: the container size Spark computes"
              + " (`ContainerSize`): `spark.executor.memory` + `spark.memory.offHeap.size` (if"
              + " `spark.memory.offHeap.enabled`) + memoryOverhead (`MemoryOverhead`) +"
              + " `spark.executor.pyspark.memory` (if set), in local mode with the driver's"
              + " memory and overhead; used by `auto` on YARN and Kubernetes only, by `true`"
              + " everywhere. Set: used on every master, and under a cgroup limit too, where the"
              + " tighter of the two counts");

  /** Whether the pod guard holds Spark's free off-heap memory while the headroom is short. */
  public static final ConfigKey<Boolean> GUARD_OFF_HEAP =
      key(
          "spark.nativepool.guard.offHeap",
          "true",
          "`true`",
          "boolean",
          Side.EXECUTOR,
          NativePoolConf::bool,
          "whether the pod guard makes every consumer of Spark's off-heap memory give way, not"
              + " only nativepool's: while the headroom is short it holds every free byte of"
              + " Spark's off-heap memory above `spark.nativepool.guard.offHeapFloor` (as off-heap"
              + " storage memory of a block no store holds, which no eviction can take back), so"
              + " that Spark's own sorters, aggregations and joins in off-heap mode and another"
              + " engine's pools (Gluten's) meet no room at their next borrow and spill, each on"
              + " its own thread; nothing of ours calls their `spill()`. Never beside Comet"
              + " (`spark.plugins` naming `org.apache.spark.CometPlugin` or `spark.sql.extensions`"
              + " its extensions, or a Comet consumer holding memory): Comet fails a task whose"
              + " reservation that cannot spill Spark grants short. It goes back once the pod"
              + " could take them growing into it. Needs `spark.memory.offHeap.size` > 0. `false`:"
              + " only native consumers give way, into their pools' ballast");

  /** What the pod guard leaves Spark's off-heap consumers; null (unset): automatic. */
  public static final ConfigKey<Long> GUARD_OFF_HEAP_FLOOR =
      key(
          "spark.nativepool.guard.offHeapFloor",
          null,
          "unset: what execution keeps beside a full storage region",
          "size",
          Side.EXECUTOR,
          v -> v == null || v.isEmpty() ? null : atLeast(Bytes.parse(v), 0),
          "the off-heap memory the pod guard always leaves Spark's consumers, beyond what"
              + " nativepool's own pools hold, while it holds the rest: held lower, a Tungsten"
              + " consumer that cannot get a page after spilling fails its task, and one held to a"
              + " sliver spills again and again into files Spark then merges all at once (a 1 MiB"
              + " heap array and a 1 MiB read buffer each). Unset: Spark's own line, what execution"
              + " keeps beside a storage region full of cached blocks, which no execution acquire"
              + " may evict: `spark.memory.offHeap.size` less `spark.memory.storageFraction` of it"
              + " (half, by default), and at least two of Spark's pages for each task slot");

  // ---- reporting ----

  /** The executor's summary line interval in ms; 0: none. */
  public static final ConfigKey<Long> LOG_INTERVAL =
      key(
          "spark.nativepool.memory.logInterval",
          "0",
          "`0` (off)",
          "duration",
          Side.EXECUTOR,
          NativePoolConf::duration,
          "on each executor, one INFO line per interval (logger"
              + " `org.nativepool.spark.executor.ExecutorReporter`): reserved, allocated, held and"
              + " slack, RSS, the Go runtime's mapped bytes and limit, task pools, peak, spills."
              + " Off by default because the driver's gauges and the event log carry the same"
              + " figures; turn it on (e.g. `60s`) where no metrics sink is scraped");

  /** Whether the executor watches its memory: gauges, the reporting thread, the ledger's reads. */
  public static final ConfigKey<Boolean> MONITORING =
      key(
          "spark.nativepool.monitoring",
          "true",
          "`true`",
          "boolean",
          Side.EXECUTOR,
          NativePoolConf::bool,
          "`false`: the executor registers no gauges, starts no reporting thread and never reads"
              + " the executor memory ledger, so it sends the driver no samples, threshold"
              + " crossings, growth reports or pod guard episodes, and the Native Memory page has"
              + " nothing of it. The pools, the pod guard and leak checks at task end work as"
              + " with `true`. For measuring what watching costs (`bench/watch-cost.sh`)");

  /** Heartbeat intervals per sample event of an executor in the event log; 0: none. */
  public static final ConfigKey<Integer> EVENT_LOG_SAMPLE_EVERY =
      key(
          "spark.nativepool.eventLog.sampleEvery",
          "6",
          "`6`",
          "heartbeat intervals",
          Side.DRIVER,
          v -> count(v, 0),
          "the driver posts at most one sample of each executor to the event log per N"
              + " heartbeat intervals (`ExecutorSampleEvent`; 6 × the 10 s heartbeat = one a"
              + " minute per executor); `0` = none. Threshold crossings and stage peaks are"
              + " always posted");

  /** Whether the driver sets {@code spark.executor.memoryOverhead}. */
  public static final ConfigKey<Boolean> AUTO_OVERHEAD =
      key(
          "spark.nativepool.autoOverhead",
          "false",
          "`false`",
          "boolean",
          Side.DRIVER,
          NativePoolConf::bool,
          "sets `spark.executor.memoryOverhead` before the default ResourceProfile is built (Spark"
              + " 4.1 and later; Spark 3.5 and 4.0 build the profile first, so there the application"
              + " is refused at startup with the `spark.executor.memoryOverhead` to set instead):"
              + " Spark's own overhead (`MemoryOverhead`) + 16m (Go runtime) + 10%"
              + " of `spark.memory.offHeap.size` (+ the whole off-heap size when"
              + " `spark.memory.offHeap.enabled` is false), in MiB rounded up; never below the"
              + " user's value; logged");

  // ---- the executor memory ledger ----

  /** Thresholds on the executor memory ledger's parts. */
  public static final ConfigKey<List<LedgerThreshold>> LEDGER_THRESHOLDS =
      key(
          "spark.nativepool.ledger.thresholds",
          "",
          "empty",
          "comma-separated `part=size`",
          Side.EXECUTOR,
          LedgerThreshold::parse,
          "thresholds on the executor memory ledger: `total` (the RSS), `unexplained`, or any"
              + " part (`native.allocated`, `jvm.direct`, `netty.shared.direct`, …;"
              + " docs/OBSERVING.md, \"The executor memory ledger\"): a part a reading may have,"
              + " `netty.<pool>.<figure>` for any pool name and `offHeap.<engine>` for `comet`,"
              + " `gluten`, `spark` or"
              + " `other`; another name fails the application at its start, naming the parts."
              + " Each crossing, up or down, reaches the `LedgerListener`s, a"
              + " log line on `org.nativepool.spark.ledger.ExecutorLedger` (WARN up, INFO down),"
              + " the counter `ledger.thresholdCrossings` and the event log"
              + " (`LedgerCrossingEvent`). Read every poll period (the heartbeat interval, at most"
              + " 1 s)");

  /** Hysteresis of the ledger's thresholds, a fraction in [0, 1). */
  public static final ConfigKey<Double> LEDGER_HYSTERESIS =
      key(
          "spark.nativepool.ledger.hysteresis",
          "0.1",
          "`0.1`",
          "fraction in [0, 1)",
          Side.EXECUTOR,
          NativePoolConf::fraction,
          "after crossing level L upwards, a part crosses downwards (and may cross up again)"
              + " only once below L × (1 − h)");

  /** {@code LedgerListener} classes the executor plugin registers at startup. */
  public static final ConfigKey<List<String>> LEDGER_LISTENERS =
      key(
          "spark.nativepool.ledger.listeners",
          "",
          "empty",
          "comma-separated class names",
          Side.EXECUTOR,
          NativePoolConf::names,
          "`LedgerListener` classes (public, no-argument constructor) the executor plugin"
              + " registers at startup; the driver refuses a class it cannot find or that is no"
              + " such class when the application starts; one an executor cannot make is left out"
              + " there, logged at ERROR, and the pools work on");

  /** Task ends per window of the growth detector. */
  public static final ConfigKey<Integer> GROWTH_WINDOW =
      key(
          "spark.nativepool.ledger.growth.window",
          "25",
          "`25`",
          "tasks",
          Side.EXECUTOR,
          v -> count(v, 1),
          "the growth detector's window: a part's floor is its least value over this many task"
              + " ends");

  /** Consecutive rising window floors after which the growth detector reports a part. */
  public static final ConfigKey<Integer> GROWTH_WINDOWS =
      key(
          "spark.nativepool.ledger.growth.windows",
          "4",
          "`4`",
          "windows",
          Side.EXECUTOR,
          v -> count(v, 1),
          "a part is reported when its floor rose in each of this many consecutive windows"
              + " (twice as many for the JVM's own `jvm.*` parts, which warm up for longer; no"
              + " step under a quarter of the average) …");

  /** The least growth of a part's floor that the detector reports. */
  public static final ConfigKey<Long> GROWTH_MIN_BYTES =
      key(
          "spark.nativepool.ledger.growth.minBytes",
          "16m",
          "`16m`",
          "size",
          Side.EXECUTOR,
          Bytes::parse,
          "… and by at least this much in all; reported again only after another this much"
              + " (WARN on `org.nativepool.spark.ledger.ExecutorLedger`, counter"
              + " `ledger.growthReports`, listeners, event log `GrowthReportEvent`)");

  // ---- who holds the heap ----

  /** Whether each JVM keeps a recording of Old Object Samples, to name the heap's holders. */
  public static final ConfigKey<Boolean> HEAP_HOLDERS =
      key(
          "spark.nativepool.heapHolders.enabled",
          "true",
          "`true`",
          "boolean",
          Side.BOTH,
          NativePoolConf::bool,
          "each executor and the driver keep a JDK Flight Recorder recording of Old Object"
              + " Samples only (a bounded, size-weighted sample of live objects with their"
              + " allocation stacks; started from the plugin, no JVM flag), and a growth report of"
              + " the heap (`jvm.heap.afterGc`) names the heap's holders: the types sampled since"
              + " the growth began, their allocation stacks and their paths from a GC root. The"
              + " driver checks its own heap after garbage collections with the same rule."
              + " `false`: no recording, heap growth reported without holders, no \"who holds the"
              + " heap\" action");

  /** How long one path search from the samples to the GC roots may take. */
  public static final ConfigKey<Long> HEAP_HOLDERS_CUTOFF =
      key(
          "spark.nativepool.heapHolders.cutoff",
          "5s",
          "`5s`",
          "duration",
          Side.BOTH,
          v -> atLeast(duration(v), 1),
          "the time bound of one analysis's search for the samples' paths to GC roots (JFR's"
              + " `cutoff`): the JVM is paused while it runs (measured: 0.1–1 s in a spark-shell,"
              + " 2.3 s on a 4 GiB heap of a million objects). Samples whose path was not found in"
              + " time are reported without one, and the report says the search ran out");

  /** Whether the Native Memory page offers "who holds the heap" for each JVM. */
  public static final ConfigKey<Boolean> HEAP_HOLDERS_ON_DEMAND =
      key(
          "spark.nativepool.heapHolders.onDemand",
          "true",
          "`true`",
          "boolean",
          Side.BOTH,
          NativePoolConf::bool,
          "the live Native Memory page has a \"who holds the heap\" action per JVM (the driver"
              + " and each executor), allowed to users with Spark's modify permission"
              + " (`spark.acls.enable`, `spark.modify.acls`, as the UI's kill links); executors"
              + " ask the driver for requests once per heartbeat. `false`: no action, no asking");

  /** The least time between two analyses of one JVM, on demand or for growth reports. */
  public static final ConfigKey<Long> HEAP_HOLDERS_INTERVAL =
      key(
          "spark.nativepool.heapHolders.minInterval",
          "30s",
          "`30s`",
          "duration",
          Side.BOTH,
          NativePoolConf::duration,
          "a JVM is analysed at most once per this interval on demand (a request sooner is"
              + " refused with the time left), and at most once per this interval for growth"
              + " reports of its heap (a rise sooner waits): each analysis pauses the JVM for its"
              + " path search. One analysis runs at a time per JVM");

  /** Readings per window of the driver's check of its own heap. */
  public static final ConfigKey<Integer> DRIVER_HEAP_WINDOW =
      key(
          "spark.nativepool.driver.heapGrowth.window",
          "1",
          "`1`",
          "readings",
          Side.DRIVER,
          v -> count(v, 1),
          "the driver checks its own heap once a second (what a young collection would leave),"
              + " counting a reading when it moved by a quarter of"
              + " `spark.nativepool.driver.heapGrowth.minBytes` or more (an idle driver counts"
              + " none), with the executors' floor-rising rule over windows of this many readings"
              + " …");

  /** Consecutive rising windows after which the driver reports its own heap. */
  public static final ConfigKey<Integer> DRIVER_HEAP_WINDOWS =
      key(
          "spark.nativepool.driver.heapGrowth.windows",
          "3",
          "`3`",
          "windows",
          Side.DRIVER,
          v -> count(v, 1),
          "… rising in this many consecutive windows …");

  /** The least growth of its heap the driver reports. */
  public static final ConfigKey<Long> DRIVER_HEAP_MIN_BYTES =
      key(
          "spark.nativepool.driver.heapGrowth.minBytes",
          "64m",
          "`64m`",
          "size",
          Side.DRIVER,
          v -> atLeast(Bytes.parse(v), 1),
          "… by at least this much in all (a driver warming up, loading classes and starting its"
              + " services, grows by less over so few readings); reported again after another"
              + " this much. The report names the heap's holders (WARN on"
              + " `org.nativepool.spark.ledger.DriverHeapWatch`, event log `GrowthReportEvent` of"
              + " executor `driver`)");

  /** Every key, in declaration order. */
  public static List<ConfigKey<?>> all() {
    return Collections.unmodifiableList(KEYS);
  }

  /** The prefix of every key the plugin reads; a key under it the registry lacks is unknown. */
  public static final String PREFIX = "spark.nativepool.";

  /**
   * Every key an operator may set: the registry's keys and the deprecated ones still read in their
   * place.
   */
  public static List<String> knownKeys() {
    List<String> out = new ArrayList<>();
    for (ConfigKey<?> k : KEYS) {
      out.add(k.key());
      if (k.deprecatedKey() != null && !out.contains(k.deprecatedKey())) {
        out.add(k.deprecatedKey());
      }
    }
    return out;
  }

  /**
   * The keys of {@code conf} meant for the plugin that the registry does not know: under {@value
   * #PREFIX} in any case (Spark keys are case-sensitive, so {@code spark.NativePool.chunkSize} is
   * as much a slip as {@code spark.nativepool.chunksize}), or under a misspelt prefix ({@code
   * spark.nativpool.}, {@code spark.native.pool.}: a second word that starts with {@code native}
   * or is within two letters of {@code nativepool}). The plugin ignores each.
   */
  public static List<String> unknownKeys(SparkConf conf) {
    List<String> known = knownKeys();
    List<String> out = new ArrayList<>();
    for (Tuple2<String, String> kv : conf.getAll()) {
      String k = kv._1();
      if (meantForThePlugin(k) && !known.contains(k)) {
        out.add(k);
      }
    }
    Collections.sort(out);
    return out;
  }

  /** Whether {@code key}'s prefix is the plugin's, in any case or misspelt a little. */
  static boolean meantForThePlugin(String key) {
    String k = key.toLowerCase(Locale.ROOT);
    if (k.startsWith(PREFIX)) {
      return true;
    }
    String[] words = k.split("\\.", 3);
    return words.length == 3
        && words[0].equals("spark")
        && (words[1].startsWith("native") || editDistance(words[1], "nativepool") <= 2);
  }

  /**
   * The known key closest to {@code key}: the least edit distance between the two, ignoring case
   * (so a wrong case alone is distance 0), the first declared among equals.
   */
  public static String closestKey(String key) {
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    String k = key.toLowerCase(Locale.ROOT);
    for (String known : knownKeys()) {
      int d = editDistance(k, known.toLowerCase(Locale.ROOT));
      if (d < bestDistance) {
        best = known;
        bestDistance = d;
      }
    }
    return best;
  }

  /**
   * The warning for an unknown key: it is ignored, and the closest known key is named, e.g. {@code
   * nativepool: spark.nativepool.chunksize is not a setting of the plugin and is ignored (keys are
   * case-sensitive): did you mean spark.nativepool.chunkSize?}.
   */
  public static String unknownKeyWarning(String key) {
    String closest = closestKey(key);
    boolean caseOnly = closest.equalsIgnoreCase(key);
    return "nativepool: "
        + key
        + " is not a setting of the plugin and is ignored"
        + (caseOnly ? " (keys are case-sensitive)" : "")
        + ": did you mean "
        + closest
        + "? (every key: docs/CONFIGURATION.md)";
  }

  /**
   * Levenshtein's distance between {@code a} and {@code b}: the fewest insertions, deletions and
   * changes of one character that make one the other; for naming the closest known name.
   */
  public static int editDistance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int change = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
        cur[j] = Math.min(change, Math.min(prev[j] + 1, cur[j - 1] + 1));
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  /**
   * The configuration table of docs/CONFIGURATION.md: one row per key, in declaration order: key,
   * default, unit,
   * meaning.
   */
  public static String markdownTable() {
    StringBuilder b = new StringBuilder("| key | default | unit | meaning |\n|---|---|---|---|\n");
    for (ConfigKey<?> k : KEYS) {
      String doc = k.side() == Side.DRIVER ? "driver side: " + k.doc() : k.doc();
      b.append("| `")
          .append(k.key())
          .append("` | ")
          .append(k.defaultDoc())
          .append(" | ")
          .append(k.unit())
          .append(" | ")
          .append(doc)
          .append(" |\n");
    }
    return b.toString();
  }

  // ---- parsers: each throws IllegalArgumentException with the reason; ConfigKey adds the key ----

  static boolean bool(String v) {
    switch (v.toLowerCase(Locale.ROOT)) {
      case "true":
        return true;
      case "false":
        return false;
      default:
        throw new IllegalArgumentException("not a boolean (true or false)");
    }
  }

  static long integer(String v) {
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not an integer", e);
    }
  }

  static long duration(String v) {
    long ms;
    try {
      ms = JavaUtils.timeStringAsMs(v);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a duration (e.g. 500ms, 60s, 5min)", e);
    }
    return atLeast(ms, 0);
  }

  static double fraction(String v) {
    double h;
    try {
      h = Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("not a number", e);
    }
    if (!(h >= 0 && h < 1)) {
      throw new IllegalArgumentException("must be in [0, 1)");
    }
    return h;
  }

  static String logLevel(String v) {
    if (v == null || v.isEmpty()) {
      return null;
    }
    String u = v.toUpperCase(Locale.ROOT);
    if (!LOG_LEVELS.contains(u)) {
      throw new IllegalArgumentException("not a level (TRACE, DEBUG, INFO, WARN, ERROR or OFF)");
    }
    return u;
  }

  static List<String> names(String v) {
    List<String> out = new ArrayList<>();
    for (String c : v.split(",")) {
      // trim() drops control characters too, which isBlank() keeps: test what is added.
      String name = c.trim();
      if (!name.isEmpty()) {
        out.add(name);
      }
    }
    return List.copyOf(out);
  }

  static long[] positiveSizes(String v) {
    List<String> items = names(v);
    long[] out = new long[items.size()];
    for (int i = 0; i < out.length; i++) {
      long s;
      try {
        s = Bytes.parse(items.get(i));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("'" + items.get(i) + "' is " + e.getMessage(), e);
      }
      out[i] = atLeast(s, 1);
    }
    return out;
  }

  /**
   * A count key's value: an integer of at least {@code min} that fits an int. Every int key parses
   * through here, so that none can cast a larger value down to a wrong one.
   */
  static int count(String v, long min) {
    return toInt(atLeast(integer(v), min));
  }

  /** {@code v} as an int: a count above {@link Integer#MAX_VALUE} is refused, never truncated. */
  static int toInt(long v) {
    if (v > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("must be <= " + Integer.MAX_VALUE);
    }
    return (int) v;
  }

  static long positiveLimit(long v) {
    if (v == 0) {
      throw new IllegalArgumentException("must be > 0 (unset it for the container size)");
    }
    return v;
  }

  static long atLeast(long v, long min) {
    if (v < min) {
      throw new IllegalArgumentException("must be >= " + min);
    }
    return v;
  }

  static long atMost(long v, long max, String why) {
    if (v > max) {
      throw new IllegalArgumentException(why);
    }
    return v;
  }
}
