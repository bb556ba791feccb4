/*
 * CometSortBench: the Comet side of the side-by-side comparison with nativepool's Spark demo
 * (bench/RESULTS.md). It sorts rows of {key int64, payload int64}
 * in Spark 4.1 local[2] through DataFusion Comet 1.2.0 (native CometSortExec, which spills) with
 * a small spark.memory.offHeap.size, and reports
 *
 *     peak RSS growth / peak off-heap execution memory
 *
 * measured the way nativepool's Spark demo is: RSS from /proc/self/status every ~50 ms, against
 * the off-heap execution memory Spark's TaskMemoryManager granted (which is all Comet's pools
 * reserve: fair_unified / greedy_unified forward every reservation to the TMM as OFF_HEAP).
 *
 * Run with the JDK's single-file source launcher (no build); bench/comet/run.sh does it:
 *
 *     java <Spark's --add-opens list> -Xms1g -Xmx1g -XX:+AlwaysPreTouch \
 *          -cp "$(cat bench/comet/out/classpath.txt)" bench/comet/CometSortBench.java \
 *          --rows 20000000 --budget 64m
 *
 * Options (all optional):
 *   --rows N            total rows, split evenly over --partitions (default 20,000,000)
 *   --partitions P      Range partitions = concurrent tasks under local[P] (default 2)
 *   --budget SIZE       spark.memory.offHeap.size (default 64m)
 *   --engine E          comet (default) | spark: the same job on vanilla Spark (Tungsten
 *                       UnsafeExternalSorter on OFF_HEAP pages), as a control
 *   --pool NAME         spark.comet.exec.memoryPool (default fair_unified)
 *   --sample-ms MS      RSS sampling period (default 50)
 *   --warmup-rows N     rows of the warm-up job that loads libcomet.so and JITs (default 2,000,000)
 *   --csv FILE          write every sample (t_ms, rss, rss_anon, offheap_exec, heap_used)
 *   --nativepool MODE   none (default) | guard: nativepool's plugin beside the engine, with no
 *                       nativepool engine in the job (spark.plugins also names
 *                       org.nativepool.spark.NativePoolPlugin; its jar must be on the classpath:
 *                       run.sh adds $NATIVEPOOL_JAR), its pod guard as configured by default |
 *                       noguard: the plugin with spark.nativepool.guard.enabled=false
 *   --conf KEY=VALUE    a Spark setting for the session, after the ones above (repeatable): e.g.
 *                       spark.nativepool.heapHolders.enabled=false, to split the plugin's cost
 *   --burst SIZE        direct buffers taken outside any accounting during the measured job, as
 *                       nativepool's demo --burst does (default 0: none): --burst-at S seconds
 *                       into the job once Spark's off-heap execution memory is in use (default 2),
 *                       over --burst-ramp S seconds in 4 MiB steps (0: at once; default 2), held
 *                       --burst-hold S seconds (default 10), then freed
 *
 * With -XX:NativeMemoryTracking=summary on the JVM (run.sh: NMT=summary), it also prints the NMT
 * summary.diff over the measured job: the JVM's own native growth, which RSS growth includes.
 *
 * Measured action: Dataset.foreachPartition over the sorted DataFrame, which checks every
 * partition is sorted by key (the job fails otherwise) and accumulates count, sum(payload) and
 * sum(key) so the sort cannot be optimised away and its output is verified. The executed
 * physical plan of that action is taken from SparkListenerSQLExecutionStart and printed; the run
 * fails unless it contains CometSort (engine comet).
 *
 * Exit status: 0 on success, 1 on a failed check (plan without CometSort, unsorted output, wrong
 * count or checksum), 2 on bad arguments.
 */

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.function.ForeachPartitionFunction;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart;
import org.apache.spark.util.LongAccumulator;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.xxhash64;

public final class CometSortBench {

  private CometSortBench() {}

  /** Parsed command line. */
  record Options(long rows, int partitions, String budget, String engine, String pool,
      long sampleMs, long warmupRows, String csv, long burst, double burstAt, double burstRamp,
      double burstHold, String nativepool, List<String> confs) {

    static Options parse(String[] args) {
      long rows = 20_000_000L;
      int partitions = 2;
      String budget = "64m";
      String engine = "comet";
      String pool = "fair_unified";
      long sampleMs = 50;
      long warmupRows = 2_000_000L;
      String csv = null;
      long burst = 0;
      double burstAt = 2, burstRamp = 2, burstHold = 10;
      String nativepool = "none";
      List<String> confs = new ArrayList<>();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("missing value after " + a);
        }
        String v = args[++i];
        switch (a) {
          case "--rows" -> rows = Long.parseLong(v.replace("_", ""));
          case "--partitions" -> partitions = Integer.parseInt(v);
          case "--budget" -> budget = v;
          case "--engine" -> engine = v;
          case "--pool" -> pool = v;
          case "--sample-ms" -> sampleMs = Long.parseLong(v);
          case "--warmup-rows" -> warmupRows = Long.parseLong(v.replace("_", ""));
          case "--csv" -> csv = v;
          case "--burst" -> burst = org.apache.spark.network.util.JavaUtils.byteStringAsBytes(v);
          case "--burst-at" -> burstAt = Double.parseDouble(v);
          case "--burst-ramp" -> burstRamp = Double.parseDouble(v);
          case "--burst-hold" -> burstHold = Double.parseDouble(v);
          case "--nativepool" -> nativepool = v;
          case "--conf" -> {
            if (v.indexOf('=') <= 0) {
              throw new IllegalArgumentException("--conf takes KEY=VALUE, got " + v);
            }
            confs.add(v);
          }
          default -> throw new IllegalArgumentException("unknown option " + a);
        }
      }
      if (!engine.equals("comet") && !engine.equals("spark")) {
        throw new IllegalArgumentException("--engine must be comet or spark, got " + engine);
      }
      if (!nativepool.equals("none") && !nativepool.equals("guard")
          && !nativepool.equals("noguard")) {
        throw new IllegalArgumentException(
            "--nativepool must be none, guard or noguard, got " + nativepool);
      }
      if (rows <= 0 || partitions <= 0 || sampleMs <= 0 || warmupRows <= 0) {
        throw new IllegalArgumentException("--rows, --partitions, --sample-ms, --warmup-rows must be > 0");
      }
      return new Options(rows, partitions, budget, engine, pool, sampleMs, warmupRows, csv,
          burst, burstAt, burstRamp, burstHold, nativepool, List.copyOf(confs));
    }
  }

  /**
   * The burst: direct buffers (zeroed by allocateDirect, so touched) taken on a thread of its own,
   * in 4 MiB steps over the ramp, once Spark's off-heap execution memory is in use and the start
   * time has come; held, then freed at once (StorageUtils.dispose).
   */
  static final class Burst extends Thread {
    static final long STEP = 4L << 20;
    private final Options o;
    private final long t0;
    private final List<java.nio.ByteBuffer> buffers = new ArrayList<>();
    volatile long startedMs = -1, freedMs = -1;
    private volatile boolean stop;

    Burst(Options o, long t0) {
      super("comet-bench-burst");
      setDaemon(true);
      this.o = o;
      this.t0 = t0;
    }

    private long now() {
      return (System.nanoTime() - t0) / 1_000_000;
    }

    @Override
    public void run() {
      try {
        while (!stop && (now() < o.burstAt() * 1000
            || SparkEnv.get().memoryManager().offHeapExecutionMemoryUsed() <= 0)) {
          Thread.sleep(10);
        }
        if (stop) {
          return;
        }
        startedMs = now();
        long steps = o.burstRamp() == 0 ? 1 : Math.max(1, (o.burst() + STEP - 1) / STEP);
        long pause = steps == 1 ? 0 : (long) (o.burstRamp() * 1000 / steps);
        long taken = 0;
        for (long i = 0; i < steps && !stop; i++) {
          long n = steps == 1 ? o.burst() : Math.min(STEP, o.burst() - taken);
          while (n > 0) {
            int piece = (int) Math.min(n, STEP);
            synchronized (buffers) {
              buffers.add(java.nio.ByteBuffer.allocateDirect(piece));
            }
            taken += piece;
            n -= piece;
          }
          Thread.sleep(pause);
        }
        long until = now() + (long) (o.burstHold() * 1000);
        while (!stop && now() < until) {
          Thread.sleep(10);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        free();
      }
    }

    void free() {
      synchronized (buffers) {
        if (buffers.isEmpty()) {
          return;
        }
        for (java.nio.ByteBuffer b : buffers) {
          org.apache.spark.storage.StorageUtils.dispose(b);
        }
        buffers.clear();
      }
      freedMs = now();
    }

    void finish() throws InterruptedException {
      stop = true;
      interrupt();
      join(10_000);
      free();
    }
  }

  /** One /proc/self/status reading, in bytes. */
  record Proc(long rss, long rssAnon, long rssFile) {
    static Proc read() {
      long rss = -1, anon = -1, file = -1;
      try {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
          if (line.startsWith("VmRSS:")) {
            rss = kib(line);
          } else if (line.startsWith("RssAnon:")) {
            anon = kib(line);
          } else if (line.startsWith("RssFile:")) {
            file = kib(line);
          }
        }
      } catch (IOException e) {
        throw new IllegalStateException("read /proc/self/status: " + e, e);
      }
      if (rss < 0 || anon < 0 || file < 0) {
        throw new IllegalStateException("VmRSS/RssAnon/RssFile missing from /proc/self/status");
      }
      return new Proc(rss, anon, file);
    }

    private static long kib(String line) {
      String[] f = line.trim().split("\\s+");
      return Long.parseLong(f[1]) * 1024L;
    }
  }

  /**
   * nativepool's executor memory ledger, when its plugin runs beside the engine (--nativepool):
   * read by reflection (the plugin's jar is on the classpath only then), every sample, keeping the
   * reading in which the engine's share of Spark's off-heap memory (offHeap.comet, or
   * offHeap.spark for Spark alone) was highest: what the engine's consumers held of Spark's
   * memory, and the ledger's unexplained remainder beside it, what nobody reserved.
   */
  static final class LedgerWatch {
    private final String part;
    private final java.lang.reflect.Method current, latest, figures, line;
    private Map<String, Long> best;
    private String bestLine;

    LedgerWatch(String part) throws ReflectiveOperationException {
      this.part = part;
      Class<?> ledger = Class.forName("org.nativepool.spark.ledger.ExecutorLedger");
      Class<?> snapshot = Class.forName("org.nativepool.spark.ledger.LedgerSnapshot");
      current = ledger.getMethod("current");
      latest = ledger.getMethod("latest");
      figures = snapshot.getMethod("figures");
      line = snapshot.getMethod("line");
    }

    @SuppressWarnings("unchecked")
    synchronized void sample() {
      try {
        Object l = current.invoke(null);
        Object s = l == null ? null : latest.invoke(l);
        if (s == null) {
          return;
        }
        Map<String, Long> f = (Map<String, Long>) figures.invoke(s);
        if (best == null || f.getOrDefault(part, -1L) > best.getOrDefault(part, -1L)) {
          best = f;
          bestLine = (String) line.invoke(s);
        }
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("reading nativepool's ledger: " + e, e);
      }
    }

    synchronized void print() {
      if (best == null) {
        System.out.println("nativepool ledger: no reading");
        return;
      }
      System.out.printf(Locale.ROOT,
          "nativepool ledger at the highest %s: %s=%s unexplained=%s rss=%s guard.offHeapBallast=%s%n",
          part, part, mib(best.getOrDefault(part, 0L)), mib(best.getOrDefault("unexplained", 0L)),
          mib(best.getOrDefault("rss", 0L)), mib(best.getOrDefault("guard.offHeapBallast", 0L)));
      System.out.println("nativepool ledger line: " + bestLine);
    }
  }

  /** One sample of the background sampler. */
  record Sample(long tNanos, Proc proc, long offHeapExec, long heapUsed) {}

  /**
   * Samples RSS (/proc/self/status), the executor's off-heap execution memory
   * (MemoryManager.offHeapExecutionMemoryUsed, the sum over all running tasks) and JVM heap used
   * every period. Runs on one daemon thread; peaks are read after stop().
   */
  static final class Sampler implements Runnable {
    private final long periodMs;
    private final LedgerWatch ledger;
    private final MemoryMXBean mx = ManagementFactory.getMemoryMXBean();
    private final ConcurrentLinkedQueue<Sample> samples = new ConcurrentLinkedQueue<>();
    private volatile boolean stop;
    private Thread thread;

    Sampler(long periodMs, LedgerWatch ledger) {
      this.periodMs = periodMs;
      this.ledger = ledger;
    }

    Sample sampleNow() {
      long off = SparkEnv.get().memoryManager().offHeapExecutionMemoryUsed();
      return new Sample(System.nanoTime(), Proc.read(), off, mx.getHeapMemoryUsage().getUsed());
    }

    void start() {
      thread = new Thread(this, "rss-sampler");
      thread.setDaemon(true);
      thread.start();
    }

    List<Sample> stop() throws InterruptedException {
      stop = true;
      thread.join();
      return new ArrayList<>(samples);
    }

    @Override
    public void run() {
      while (!stop) {
        samples.add(sampleNow());
        if (ledger != null) {
          ledger.sample();
        }
        try {
          Thread.sleep(periodMs);
        } catch (InterruptedException e) {
          return;
        }
      }
      samples.add(sampleNow());
    }
  }

  /** Per-task figures from SparkListenerTaskEnd, keyed by stage so the warm-up can be excluded. */
  record TaskEnd(int stageId, long taskId, long peakOffHeap, long peakOnHeap, long memSpilled,
      long diskSpilled, long launchMs, long finishMs, String reason) {}

  /** Collects task ends and the physical plan of every SQL execution. */
  static final class Collector extends SparkListener {
    final ConcurrentLinkedQueue<TaskEnd> tasks = new ConcurrentLinkedQueue<>();
    final Map<Long, String> plans = new ConcurrentHashMap<>();

    @Override
    public void onTaskEnd(SparkListenerTaskEnd e) {
      TaskMetrics m = e.taskMetrics();
      long off = m == null ? -1 : m.peakOffHeapExecutionMemory();
      long on = m == null ? -1 : m.peakOnHeapExecutionMemory();
      long ms = m == null ? -1 : m.memoryBytesSpilled();
      long ds = m == null ? -1 : m.diskBytesSpilled();
      tasks.add(new TaskEnd(e.stageId(), e.taskInfo().taskId(), off, on, ms, ds,
          e.taskInfo().launchTime(), e.taskInfo().finishTime(), e.reason().toString()));
    }

    @Override
    public void onOtherEvent(SparkListenerEvent event) {
      if (event instanceof SparkListenerSQLExecutionStart s) {
        plans.put(s.executionId(), s.physicalPlanDescription());
      }
    }
  }

  /** Checks sortedness per partition and accumulates count and checksums. */
  static final class Verify implements ForeachPartitionFunction<Row> {
    private final LongAccumulator count;
    private final LongAccumulator sumPayload;
    private final LongAccumulator sumKey;
    private final LongAccumulator unsorted;

    Verify(LongAccumulator count, LongAccumulator sumPayload, LongAccumulator sumKey,
        LongAccumulator unsorted) {
      this.count = count;
      this.sumPayload = sumPayload;
      this.sumKey = sumKey;
      this.unsorted = unsorted;
    }

    @Override
    public void call(Iterator<Row> it) {
      long n = 0, sp = 0, sk = 0, bad = 0;
      long prev = Long.MIN_VALUE;
      while (it.hasNext()) {
        Row r = it.next();
        long k = r.getLong(0);
        long p = r.getLong(1);
        if (k < prev) {
          bad++;
        }
        prev = k;
        n++;
        sp += p;
        sk += k;
      }
      count.add(n);
      sumPayload.add(sp);
      sumKey.add(sk);
      unsorted.add(bad);
    }
  }

  /**
   * Runs a VM.native_memory command through the DiagnosticCommand MBean, or returns null when
   * the JVM was started without -XX:NativeMemoryTracking (run.sh sets NMT=summary for that).
   */
  static String nmt(String sub) {
    boolean on = ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .anyMatch(a -> a.startsWith("-XX:NativeMemoryTracking=") && !a.endsWith("=off"));
    if (!on) {
      return null;
    }
    try {
      return (String) ManagementFactory.getPlatformMBeanServer().invoke(
          new javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"),
          "vmNativeMemory", new Object[] {new String[] {sub}},
          new String[] {String[].class.getName()});
    } catch (Exception e) {
      return "NMT " + sub + " failed: " + e;
    }
  }

  /**
   * Threads of this process grouped by /proc/self/task/N/comm with digits folded to '#', so the
   * native threads the job leaves behind (their stacks are RSS that no pool accounts for) show.
   */
  static java.util.TreeMap<String, Integer> threadsByName() {
    java.util.TreeMap<String, Integer> m = new java.util.TreeMap<>();
    try (var dirs = Files.list(Path.of("/proc/self/task"))) {
      for (Path d : (Iterable<Path>) dirs::iterator) {
        try {
          String name = Files.readString(d.resolve("comm")).strip().replaceAll("[0-9]+", "#");
          m.merge(name, 1, Integer::sum);
        } catch (IOException gone) {
          // the thread exited while listing
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException("list /proc/self/task: " + e, e);
    }
    return m;
  }

  static String threadDiff(Map<String, Integer> before, Map<String, Integer> after) {
    StringBuilder sb = new StringBuilder();
    int tb = before.values().stream().mapToInt(Integer::intValue).sum();
    int ta = after.values().stream().mapToInt(Integer::intValue).sum();
    sb.append(String.format(Locale.ROOT, "threads: %d before the job, %d at its end", tb, ta));
    java.util.TreeSet<String> names = new java.util.TreeSet<>(before.keySet());
    names.addAll(after.keySet());
    for (String n : names) {
      int d = after.getOrDefault(n, 0) - before.getOrDefault(n, 0);
      if (d != 0) {
        sb.append(String.format(Locale.ROOT, "; '%s' %+d", n, d));
      }
    }
    return sb.toString();
  }

  static String mib(long b) {
    return String.format(Locale.ROOT, "%.1f MiB", b / 1048576.0);
  }

  static String ratio(long num, long den) {
    return den <= 0 ? "n/a" : String.format(Locale.ROOT, "%.2f", (double) num / den);
  }

  public static void main(String[] args) throws Exception {
    Options o;
    try {
      o = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("CometSortBench: " + e.getMessage());
      System.exit(2);
      return;
    }
    boolean comet = o.engine().equals("comet");
    // The single-file source launcher defines this file's classes in its own in-memory loader;
    // the local executor resolves task classes through the context loader it is created under,
    // so make that this loader or Verify cannot be deserialized in tasks.
    Thread.currentThread().setContextClassLoader(CometSortBench.class.getClassLoader());

    SparkSession.Builder b = SparkSession.builder()
        .appName("CometSortBench")
        .master("local[" + o.partitions() + "]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", String.valueOf(o.partitions()))
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.memory.offHeap.enabled", "true")
        .config("spark.memory.offHeap.size", o.budget())
        .config("spark.executor.processTreeMetrics.enabled", "true")
        .config("spark.unsafe.exceptionOnMemoryLeak", "true");
    List<String> plugins = new ArrayList<>();
    if (comet) {
      plugins.add("org.apache.spark.CometPlugin");
    }
    if (!o.nativepool().equals("none")) {
      plugins.add("org.nativepool.spark.NativePoolPlugin");
      if (o.nativepool().equals("noguard")) {
        b.config("spark.nativepool.guard.enabled", "false");
      }
    }
    if (!plugins.isEmpty()) {
      b.config("spark.plugins", String.join(",", plugins));
    }
    for (String kv : o.confs()) {
      int eq = kv.indexOf('=');
      b.config(kv.substring(0, eq), kv.substring(eq + 1));
    }
    if (comet) {
      b
          .config("spark.sql.extensions", "org.apache.comet.CometSparkSessionExtensions")
          .config("spark.comet.enabled", "true")
          .config("spark.comet.exec.enabled", "true")
          // 1.2.0 name; the older spark.comet.exec.shuffle.enabled is deprecated and logs so.
          .config("spark.comet.shuffle.enabled", "true")
          // Native Range (CometRangeExec) is off by default; without it the whole plan (Range,
          // Project, Sort) falls back to Spark, as the fallback explanation says.
          .config("spark.comet.exec.range.enabled", "true")
          .config("spark.shuffle.manager",
              "org.apache.spark.sql.comet.execution.shuffle.CometShuffleManager")
          .config("spark.comet.exec.memoryPool", o.pool())
          // Comet's own native-allocator vs pool-reserved log (1.2.0), for the untracked gap.
          .config("spark.comet.memory.logInterval", "1s")
          .config("spark.comet.explain.fallback.enabled", "true");
    }
    SparkSession spark = b.getOrCreate();
    Collector collector = new Collector();
    spark.sparkContext().addSparkListener(collector);

    System.out.printf(Locale.ROOT,
        "engine=%s nativepool=%s spark=%s budget=%s pool=%s rows=%d partitions=%d (%d rows/partition) java=%s maxHeap=%s%n",
        o.engine(), o.nativepool(), spark.version(), o.budget(), comet ? o.pool() : "-", o.rows(), o.partitions(),
        o.rows() / o.partitions(), System.getProperty("java.version"),
        mib(Runtime.getRuntime().maxMemory()));
    System.out.println("maxOffHeapMemory (Spark) = "
        + mib(SparkEnv.get().memoryManager().maxOffHeapMemory()));

    // Warm-up: the same pipeline, small, so libcomet.so is loaded, its runtime threads exist and
    // the JVM side is JIT-compiled before the baseline is taken.
    runJob(spark, o.warmupRows(), o.partitions());
    spark.sparkContext().listenerBus().waitUntilEmpty(60_000);
    int warmupStages = collector.tasks.stream().mapToInt(TaskEnd::stageId).max().orElse(-1);
    collector.tasks.clear();
    collector.plans.clear();

    LedgerWatch ledger = o.nativepool().equals("none")
        ? null : new LedgerWatch(comet ? "offHeap.comet" : "offHeap.spark");
    Sampler sampler = new Sampler(o.sampleMs(), ledger);
    System.gc();
    Thread.sleep(1000);
    // Baseline: the max RSS over 1 s of idle samples after the warm-up (the conservative choice:
    // a higher baseline gives a smaller growth).
    Proc baseline = Proc.read();
    long baselineHeap = 0;
    for (int i = 0; i < 20; i++) {
      Sample s = sampler.sampleNow();
      if (s.proc().rss() > baseline.rss()) {
        baseline = s.proc();
      }
      baselineHeap = Math.max(baselineHeap, s.heapUsed());
      Thread.sleep(50);
    }

    nmt("baseline");
    Map<String, Integer> threadsBefore = threadsByName();
    sampler.start();
    long t0 = System.nanoTime();
    Burst burst = new Burst(o, t0);
    if (o.burst() > 0) {
      burst.start();
    }
    long[] result;
    try {
      result = runJob(spark, o.rows(), o.partitions());
    } finally {
      burst.finish();
    }
    long elapsedNs = System.nanoTime() - t0;
    if (o.burst() > 0) {
      System.out.printf(Locale.ROOT, "burst=%d burst_started_ms=%d burst_freed_ms=%d%n",
          o.burst(), burst.startedMs, burst.freedMs);
    }
    Thread.sleep(2 * o.sampleMs());
    List<Sample> samples = sampler.stop();
    // JVM-internal native memory (GC, JIT, metaspace, threads, NIO ...) grown since the baseline,
    // which RSS growth includes but libcomet's own allocations are not part of.
    String nmtDiff = nmt("summary.diff");
    Map<String, Integer> threadsAfter = threadsByName();
    spark.sparkContext().listenerBus().waitUntilEmpty(60_000);

    // ---- checks -------------------------------------------------------------------------
    boolean ok = true;
    long n = o.rows();
    long expectPayloadSum = n % 2 == 0 ? (n / 2) * (n - 1) : n * ((n - 1) / 2);
    System.out.printf(Locale.ROOT, "verify: count=%d (want %d) sum(payload)=%d (want %d) "
        + "sum(key)=%d unsorted-adjacent-pairs=%d%n",
        result[0], n, result[1], expectPayloadSum, result[2], result[3]);
    if (result[0] != n || result[1] != expectPayloadSum || result[3] != 0) {
      System.out.println("FAIL: output check");
      ok = false;
    }
    String plan = collector.plans.values().stream().reduce("", (x, y) -> x + "\n" + y);
    System.out.println("---- executed physical plan of the measured job ----");
    System.out.println(plan.strip());
    System.out.println("----------------------------------------------------");
    if (comet && !plan.contains("CometSort")) {
      System.out.println("FAIL: plan has no CometSort: Comet did not run the sort natively");
      ok = false;
    }

    // ---- figures ------------------------------------------------------------------------
    long peakRss = 0, peakAnon = 0, peakOff = 0, peakHeap = 0, heapAtRssPeak = 0, offAtRssPeak = 0;
    for (Sample s : samples) {
      if (s.proc().rss() > peakRss) {
        peakRss = s.proc().rss();
        heapAtRssPeak = s.heapUsed();
        offAtRssPeak = s.offHeapExec();
      }
      peakAnon = Math.max(peakAnon, s.proc().rssAnon());
      peakOff = Math.max(peakOff, s.offHeapExec());
      peakHeap = Math.max(peakHeap, s.heapUsed());
    }
    List<TaskEnd> tasks = new ArrayList<>(collector.tasks);
    long maxTaskPeak = 0, sumTaskPeak = 0, memSpilled = 0, diskSpilled = 0;
    int measuredTasks = 0;
    for (TaskEnd t : tasks) {
      if (t.stageId() <= warmupStages) {
        continue;
      }
      measuredTasks++;
      maxTaskPeak = Math.max(maxTaskPeak, t.peakOffHeap());
      sumTaskPeak += t.peakOffHeap();
      memSpilled += t.memSpilled();
      diskSpilled += t.diskSpilled();
      System.out.printf(Locale.ROOT,
          "task %d stage %d: peakOffHeapExecutionMemory=%s peakOnHeapExecutionMemory=%s "
              + "memoryBytesSpilled=%s diskBytesSpilled=%s duration=%d ms %s%n",
          t.taskId(), t.stageId(), mib(t.peakOffHeap()), mib(t.peakOnHeap()), mib(t.memSpilled()),
          mib(t.diskSpilled()), t.finishMs() - t.launchMs(), t.reason());
    }
    long growth = peakRss - baseline.rss();
    long anonGrowth = peakAnon - baseline.rssAnon();
    System.out.printf(Locale.ROOT, "samples=%d every %d ms, elapsed=%.1f s, tasks=%d%n",
        samples.size(), o.sampleMs(), elapsedNs / 1e9, measuredTasks);
    System.out.printf(Locale.ROOT, "RSS baseline=%s (anon %s, file %s) peak=%s growth=%s; "
        + "RssAnon peak=%s growth=%s%n",
        mib(baseline.rss()), mib(baseline.rssAnon()), mib(baseline.rssFile()), mib(peakRss),
        mib(growth), mib(peakAnon), mib(anonGrowth));
    System.out.printf(Locale.ROOT, "JVM heap used: baseline=%s peak=%s at-RSS-peak=%s "
        + "(heap committed up front: -Xms=-Xmx + AlwaysPreTouch)%n",
        mib(baselineHeap), mib(peakHeap), mib(heapAtRssPeak));
    System.out.printf(Locale.ROOT, "off-heap execution memory: executor-wide sampled peak=%s "
        + "(at RSS peak %s); per-task peakOffHeapExecutionMemory max=%s sum=%s%n",
        mib(peakOff), mib(offAtRssPeak), mib(maxTaskPeak), mib(sumTaskPeak));
    System.out.println(threadDiff(threadsBefore, threadsAfter));
    if (ledger != null) {
      ledger.print();
    }
    System.out.printf(Locale.ROOT, "spilled: memoryBytesSpilled=%s diskBytesSpilled=%s%n",
        mib(memSpilled), mib(diskSpilled));
    System.out.printf(Locale.ROOT, "RATIO peak RSS growth / executor-wide peak off-heap exec = %s;"
        + " / sum of task peaks = %s; / max task peak = %s; RssAnon growth / executor peak = %s%n",
        ratio(growth, peakOff), ratio(growth, sumTaskPeak), ratio(growth, maxTaskPeak),
        ratio(anonGrowth, peakOff));
    System.out.printf(Locale.ROOT,
        "RESULT engine=%s nativepool=%s budget=%s rows=%d elapsed_s=%.1f rss_base_mib=%.1f rss_peak_mib=%.1f "
            + "rss_growth_mib=%.1f anon_growth_mib=%.1f offheap_exec_peak_mib=%.1f "
            + "task_peak_max_mib=%.1f task_peak_sum_mib=%.1f heap_peak_mib=%.1f "
            + "ratio_exec=%s ratio_tasksum=%s spilled_disk_mib=%.1f ok=%s%n",
        o.engine(), o.nativepool(), o.budget(), o.rows(), elapsedNs / 1e9, baseline.rss() / 1048576.0,
        peakRss / 1048576.0, growth / 1048576.0, anonGrowth / 1048576.0, peakOff / 1048576.0,
        maxTaskPeak / 1048576.0, sumTaskPeak / 1048576.0, peakHeap / 1048576.0,
        ratio(growth, peakOff), ratio(growth, sumTaskPeak), diskSpilled / 1048576.0, ok);

    if (nmtDiff != null) {
      System.out.println("---- NMT summary.diff (JVM-internal native memory vs the pre-job baseline) ----");
      System.out.println(nmtDiff.strip());
    }
    if (o.csv() != null) {
      try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(Path.of(o.csv())))) {
        w.println("t_ms,rss,rss_anon,rss_file,offheap_exec,heap_used");
        for (Sample s : samples) {
          w.printf(Locale.ROOT, "%d,%d,%d,%d,%d,%d%n",
              TimeUnit.NANOSECONDS.toMillis(s.tNanos() - t0), s.proc().rss(), s.proc().rssAnon(),
              s.proc().rssFile(), s.offHeapExec(), s.heapUsed());
        }
      }
    }
    spark.stop();
    System.exit(ok ? 0 : 1);
  }

  /**
   * Sorts rows {key = xxhash64(id), payload = id} within each of the Range's partitions and
   * consumes them with Verify. Returns {count, sum(payload), sum(key), unsorted pairs}.
   */
  static long[] runJob(SparkSession spark, long rows, int partitions) {
    Dataset<Row> df = spark.range(0, rows, 1, partitions)
        .select(xxhash64(col("id")).as("key"), col("id").as("payload"))
        .sortWithinPartitions(col("key"));
    var sc = spark.sparkContext();
    LongAccumulator count = sc.longAccumulator("count");
    LongAccumulator sumPayload = sc.longAccumulator("sumPayload");
    LongAccumulator sumKey = sc.longAccumulator("sumKey");
    LongAccumulator unsorted = sc.longAccumulator("unsorted");
    df.foreachPartition(new Verify(count, sumPayload, sumKey, unsorted));
    return new long[] {count.value(), sumPayload.value(), sumKey.value(), unsorted.value()};
  }
}
