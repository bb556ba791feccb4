package org.nativepool.spark.ledger;


import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PoolChunkListMetric;
import io.netty.buffer.PoolChunkMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocatorMetric;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.SparkEnv;
import org.nativepool.spark.arrow.TaskArrowAllocators;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.config.LedgerThreshold;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.jni.ArrowProcessStat;
import org.nativepool.spark.jni.ArrowProcessStats;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.jni.ProcessStats;
import org.nativepool.spark.ledger.LedgerSnapshot.Kind;
import org.nativepool.spark.memory.ExecutorState;
import org.nativepool.spark.memory.SparkConsumers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor memory ledger: reads the process's resident set and splits it into parts, each from
 * the component that owns the memory ({@link #read()}), so that an operator can see who holds the
 * bytes of an executor and what is left unexplained. The parts, by name (see {@link
 * LedgerSnapshot.Kind} for which are summed):
 *
 * <ul>
 *   <li>JVM heap: {@value #JVM_HEAP_RESIDENT} (resident: the {@code Rss} of the heap's mappings,
 *       since committed heap pages are only resident once touched; reused for up to 50 times the
 *       cost of a reading, see {@link HeapResidency}), {@value #JVM_HEAP_COMMITTED} and {@value
 *       #JVM_HEAP_USED} (detail, from the memory bean; committed is the resident part when the
 *       heap's mappings cannot be found), {@value #JVM_HEAP_AFTER_GC} (detail: what a young
 *       collection would leave, which the growth detector watches);
 *   <li>JVM, from its management beans: {@value #JVM_METASPACE} and {@value #JVM_CODE_CACHE} (the
 *       committed bytes of those memory pools); {@value #JVM_DIRECT} and {@value #JVM_MAPPED} (the
 *       buffer pools);
 *   <li>JVM, from Native Memory Tracking when the JVM runs with {@code
 *       -XX:NativeMemoryTracking=summary}: {@value #JVM_THREADS} (thread stacks and thread
 *       structures), {@value #JVM_GC} (the collector's structures, but G1's concurrent mark
 *       stack, committed whole and hardly ever touched: {@link #G1_MARK_STACK}), {@value
 *       #JVM_NATIVE} (the JVM's other native memory: compiler, symbols, the class-data archive …)
 *       and {@value #JVM_UNSAFE}
 *       (memory allocated through {@code Unsafe} that no part below claims: Spark's off-heap
 *       Tungsten pages, its spill readers' buffers). Without NMT these are absent and their bytes
 *       are unexplained;
 *   <li>{@code netty.<pool>.direct}, {@code .heap}, {@code .used} (detail): each pooled allocator
 *       Spark's transport created (the shared ones, and those of the RPC environment and the block
 *       transfer service), chunks allocated and the bytes in use in them; {@code
 *       netty.<pool>.resident} (resident), where netty allocates its direct chunks without a
 *       cleaner (as in Spark): the resident bytes of those chunks ({@link PageResidency}), which a
 *       chunk gains page by page as netty hands out its runs, so that untouched chunk memory is not
 *       counted as resident. With a cleaner the {@value #JVM_DIRECT} pool counts the chunks;
 *   <li>{@value #ARROW_JAVA}: bytes allocated by the Arrow Java allocators of the plugin's tasks,
 *       Spark's own root allocator and any {@link #registerArrowAllocator registered} one;
 *   <li>{@value #NATIVE_RESERVED}, {@value #NATIVE_HELD}, {@value #NATIVE_SLACK} (accounting): the
 *       native pools' figures; {@value #LEAKED_RESIDENT} (accounting): leaks still allocated after
 *       their task; {@value #NATIVE_ALLOCATED} (resident): bytes in live buffers of the Go Arrow
 *       allocators, open or lingering after their task;
 *   <li>the Go runtime: {@value #GO_HEAP_IN_USE}, {@value #GO_HEAP_IDLE} (free heap not yet
 *       returned to the OS), {@value #GO_STACKS}, {@value #GO_GC_META}, {@value #GO_OTHER};
 *   <li>{@value #MALLOC_RETAINED}: free bytes glibc's malloc keeps in its arenas;
 *   <li>{@code offHeap.<engine>} (resident): what the running tasks' consumers of another engine
 *       hold of Spark's off-heap memory ({@code offHeap.comet}, {@code offHeap.gluten}, {@code
 *       offHeap.other}; and {@code offHeap.spark}, Spark's own Tungsten pages, where Native Memory
 *       Tracking is off: with it they are in {@value #JVM_UNSAFE}), read from Spark's task memory
 *       managers ({@code SparkConsumers}). An engine's part counts only what the rest of the
 *       resident set leaves unexplained (a reservation not touched yet is not resident), so the
 *       unexplained remainder is then the resident memory beyond every reservation: what nobody
 *       reserved. {@value #GUARD_OFF_HEAP_BALLAST} (accounting): what the pod guard holds of
 *       Spark's off-heap memory;
 *   <li>{@value #PYTHON_WORKERS} and {@value #OTHER_PROCESSES} (resident, when the JVM has child
 *       processes): PySpark's Python workers and any other process below the JVM, which its
 *       container holds (a memory cgroup, YARN's process-tree check) though the JVM does not;
 *   <li>{@value #RSS} and {@value #UNEXPLAINED}: the total, the JVM's resident set and its
 *       children's, and RSS less the resident parts.
 * </ul>
 *
 * <p>Reading is cheap but not free (one NMT summary, a walk over netty's chunk lists): the executor
 * reads it once per poll period ({@link ExecutorLedger}) and the gauges serve the latest reading.
 * Thread-safe.
 *
 * <p>The netty parts and Spark SQL's Arrow allocator are found by reflection on Spark's private
 * fields, which a Spark line may move or a mismatched Arrow or netty may break: a part that cannot
 * be read is left out, and what could not be found (class, field or method, and the error) is
 * logged once at WARN, at the executor's start ({@link #checkReflection()}), never swallowed.
 */
public final class LedgerReader {
  private static final Logger LOG = LoggerFactory.getLogger(LedgerReader.class);

  /**
   * The executor's resident set: the JVM's ({@code VmRSS}) and, when it has child processes, theirs
   * ({@value #PYTHON_WORKERS}, {@value #OTHER_PROCESSES}).
   */
  public static final String RSS = "rss";

  /**
   * The resident memory of the JVM's child processes that are Python: PySpark's daemon and the
   * workers it forks, which run Python UDFs ({@link ChildProcesses}).
   */
  public static final String PYTHON_WORKERS = "python.workers";

  /** The resident memory of the JVM's other child processes ({@link ChildProcesses}). */
  public static final String OTHER_PROCESSES = "process.others";

  /** RSS less the sum of the resident parts. */
  public static final String UNEXPLAINED = "unexplained";

  /**
   * The JVM heap's resident bytes: the {@code Rss} of its mappings ({@link HeapResidency}); absent
   * when the heap's mappings cannot be told apart, and then {@value #JVM_HEAP_COMMITTED} is the
   * resident part instead.
   */
  public static final String JVM_HEAP_RESIDENT = "jvm.heap.resident";

  /** The JVM heap's committed bytes (detail when {@value #JVM_HEAP_RESIDENT} is read). */
  public static final String JVM_HEAP_COMMITTED = "jvm.heap.committed";

  /** The JVM heap's used bytes (detail of the committed heap). */
  public static final String JVM_HEAP_USED = "jvm.heap.used";

  /**
   * What the JVM heap would hold right after a young collection (detail, {@link #heapAfterGc()}):
   * live objects and the garbage the collections have not reached yet. Its floor rises with a heap
   * leak, and the growth detector watches it; the heap's holders tell the leak from the garbage.
   */
  public static final String JVM_HEAP_AFTER_GC = "jvm.heap.afterGc";

  /** Committed metaspace (class metadata, the compressed class space included). */
  public static final String JVM_METASPACE = "jvm.metaspace";

  /** Committed code cache (JIT-compiled code). */
  public static final String JVM_CODE_CACHE = "jvm.codeCache";

  /** Thread stacks and structures, from NMT. */
  public static final String JVM_THREADS = "jvm.threads";

  /** The garbage collector's own structures (G1's remembered sets, mark bitmaps), from NMT. */
  public static final String JVM_GC = "jvm.gc";

  /** The JVM's own native memory beyond heap, metaspace, code, threads and GC, from NMT. */
  public static final String JVM_NATIVE = "jvm.native";

  /** {@code Unsafe} allocations no other part claims (Tungsten off-heap pages), from NMT. */
  public static final String JVM_UNSAFE = "jvm.unsafe";

  /** The JVM's direct buffer pool. */
  public static final String JVM_DIRECT = "jvm.direct";

  /** The JVM's mapped buffer pools (file mappings, counted whole). */
  public static final String JVM_MAPPED = "jvm.mapped";

  /** Bytes allocated by Arrow Java allocators. */
  public static final String ARROW_JAVA = "arrow.java";

  /** Bytes the native pools' consumers reserved (accounting). */
  public static final String NATIVE_RESERVED = "native.reserved";

  /** Bytes the native pools hold from Spark (accounting). */
  public static final String NATIVE_HELD = "native.held";

  /** Held but not reserved (accounting). */
  public static final String NATIVE_SLACK = "native.slack";

  /**
   * Bytes of leaks still allocated after their task ({@code leakedResident}): accounting, since the
   * memory itself is in {@value #NATIVE_ALLOCATED} or {@value #ARROW_JAVA}.
   */
  public static final String LEAKED_RESIDENT = "leaked.resident";

  /** Bytes in live buffers of Go Arrow allocators. */
  public static final String NATIVE_ALLOCATED = "native.allocated";

  /** Go heap in spans holding objects. */
  public static final String GO_HEAP_IN_USE = "go.heapInUse";

  /** Free Go heap not yet returned to the OS. */
  public static final String GO_HEAP_IDLE = "go.heapIdle";

  /** Goroutine and Go runtime thread stacks. */
  public static final String GO_STACKS = "go.stacks";

  /** The Go runtime's GC and allocator metadata. */
  public static final String GO_GC_META = "go.gcMeta";

  /** The rest of the Go runtime. */
  public static final String GO_OTHER = "go.other";

  /** Free bytes in glibc's malloc arenas. */
  public static final String MALLOC_RETAINED = "malloc.retained";

  /** Prefix of the parts of Spark's off-heap memory held by another engine's consumers. */
  public static final String OFF_HEAP_PREFIX = "offHeap.";

  /** What the pod guard holds of Spark's off-heap memory (accounting). */
  public static final String GUARD_OFF_HEAP_BALLAST = "guard.offHeapBallast";

  /**
   * Spark's off-heap memory in use (accounting): execution memory (nativepool's pools' share,
   * {@value #NATIVE_HELD}, included) and storage memory (the pod guard's hold, {@value
   * #GUARD_OFF_HEAP_BALLAST}, included), from the executor's memory manager: what {@code
   * spark.memory.offHeap.size} bounds. Absent where the executor has no off-heap memory.
   */
  public static final String SPARK_OFF_HEAP_USED = "spark.offHeapUsed";

  /** Prefix of the netty allocator parts: {@code netty.<pool>.resident|direct|heap|used}. */
  public static final String NETTY_PREFIX = "netty.";

  /**
   * The share of the RSS above which, with Native Memory Tracking off, the unexplained remainder
   * is called large and {@link LedgerSnapshot#NMT_HINT} is given: the JVM's own native memory
   * alone is 10–20% of an idle executor's RSS.
   */
  public static final int NMT_HINT_PERCENT = 10;

  /**
   * How far the resident parts of one reading may exceed the RSS: what the process allocates
   * between the reads of one reading, which takes 3–12 ms (the RSS first, then the JVM's beans
   * and Native Memory Tracking, netty, Arrow, the Go runtime), such as a few Tungsten pages or a
   * netty chunk being touched. Every part counts resident bytes, so {@value #UNEXPLAINED} is never
   * below minus this; the demo's 484 readings never went below +25 MiB, and {@code
   * ExecutorLedgerSparkTest} checks the bound on an idle executor.
   */
  public static final long NOISE_BYTES = 16L << 20;

  /**
   * The figures of each netty pool: {@code netty.<pool>.resident} (resident bytes of its direct
   * chunks, where netty allocates them without a cleaner), {@code .direct} (direct chunks
   * allocated), {@code .heap} (heap chunks), {@code .used} (bytes in use in its chunks).
   */
  public static final List<String> NETTY_FIGURES = List.of("resident", "direct", "heap", "used");

  /**
   * The parts whose names are fixed, in display order: every part a reading may have but the
   * netty pools' and the engines' off-heap parts, whose names are made at run time ({@link
   * #knownPart}).
   */
  public static final List<String> FIXED_PARTS =
      List.of(
          RSS,
          UNEXPLAINED,
          JVM_HEAP_RESIDENT,
          JVM_HEAP_COMMITTED,
          JVM_HEAP_USED,
          JVM_METASPACE,
          JVM_CODE_CACHE,
          JVM_THREADS,
          JVM_GC,
          JVM_NATIVE,
          JVM_UNSAFE,
          JVM_DIRECT,
          JVM_MAPPED,
          ARROW_JAVA,
          NATIVE_RESERVED,
          NATIVE_HELD,
          NATIVE_SLACK,
          LEAKED_RESIDENT,
          NATIVE_ALLOCATED,
          GO_HEAP_IN_USE,
          GO_HEAP_IDLE,
          GO_STACKS,
          GO_GC_META,
          GO_OTHER,
          MALLOC_RETAINED,
          GUARD_OFF_HEAP_BALLAST,
          SPARK_OFF_HEAP_USED);

  /**
   * Whether a reading may have a part named {@code part}, so that a threshold on it can cross: one
   * of {@link #FIXED_PARTS}; {@code netty.<pool>.}{@link #NETTY_FIGURES one of its figures} for any
   * pool name, since Spark's transport names its pools at run time ({@code shared}, {@code
   * sharedNoCache}, {@code rpc.clientFactory}, {@code blockTransfer.server}, …) and a pool that
   * never appears never crosses; or {@code offHeap.<engine>} for one of {@link
   * SparkConsumers#ENGINES}. The threshold name {@code total}, the RSS, is the settings' and not
   * a part.
   */
  public static boolean knownPart(String part) {
    if (FIXED_PARTS.contains(part)) {
      return true;
    }
    if (part.startsWith(NETTY_PREFIX)) {
      int dot = part.lastIndexOf('.');
      return dot > NETTY_PREFIX.length() && NETTY_FIGURES.contains(part.substring(dot + 1));
    }
    return part.startsWith(OFF_HEAP_PREFIX)
        && SparkConsumers.ENGINES.contains(part.substring(OFF_HEAP_PREFIX.length()));
  }

  /**
   * Checks that each threshold watches a part a reading may have ({@link #knownPart}, or {@value
   * LedgerSettings#TOTAL}): a threshold on a part that does not exist could never fire.
   *
   * @param value the setting as written, for the message
   * @throws IllegalArgumentException naming the key, the value, the unknown part, the closest
   *     known one and every part that exists
   */
  public static void checkThresholds(List<LedgerThreshold> thresholds, String value) {
    for (LedgerThreshold t : thresholds) {
      if (t.part().equals(LedgerSettings.TOTAL) || knownPart(t.part())) {
        continue;
      }
      List<String> names = new ArrayList<>();
      names.add(LedgerSettings.TOTAL);
      names.addAll(FIXED_PARTS);
      for (String f : NETTY_FIGURES) {
        names.add(NETTY_PREFIX + "shared." + f);
      }
      for (String e : SparkConsumers.ENGINES) {
        names.add(OFF_HEAP_PREFIX + e);
      }
      String closest = names.get(0);
      int best = Integer.MAX_VALUE;
      for (String n : names) {
        int d =
            NativePoolConf.editDistance(
                t.part().toLowerCase(Locale.ROOT), n.toLowerCase(Locale.ROOT));
        if (d < best) {
          best = d;
          closest = n;
        }
      }
      throw new IllegalArgumentException(
          "nativepool: "
              + NativePoolConf.LEDGER_THRESHOLDS.key()
              + " = '"
              + value
              + "': no ledger part '"
              + t.part()
              + "' (did you mean "
              + closest
              + "?), so its threshold could never fire; the parts are "
              + LedgerSettings.TOTAL
              + " (the RSS), "
              + String.join(", ", FIXED_PARTS)
              + ", netty.<pool>.resident, netty.<pool>.direct, netty.<pool>.heap and"
              + " netty.<pool>.used for each of Spark's netty pools (e.g. netty.shared.direct),"
              + " and "
              + OFF_HEAP_PREFIX
              + String.join(", " + OFF_HEAP_PREFIX, SparkConsumers.ENGINES));
    }
  }

  /**
   * G1's concurrent mark stack, bytes: committed when the JVM starts ({@code MarkStackSize}
   * entries of 8 bytes, 32 MiB by default) and touched only when concurrent marking overflows its
   * tasks' queues into it, so that NMT's committed "GC" bytes hold it whole while almost none of it
   * is resident: {@value #JVM_GC} leaves it out, and what marking did touch of it counts as
   * unexplained. 0 under another collector.
   */
  static final long G1_MARK_STACK = g1MarkStackBytes();

  private static long g1MarkStackBytes() {
    try {
      com.sun.management.HotSpotDiagnosticMXBean hs =
          ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
      if (hs == null || !Boolean.parseBoolean(hs.getVMOption("UseG1GC").getValue())) {
        return 0;
      }
      return Long.parseLong(hs.getVMOption("MarkStackSize").getValue()) * 8;
    } catch (RuntimeException | LinkageError e) {
      return 0;
    }
  }

  /** How often the list of netty allocators is looked up again (they are created lazily). */
  private static final long NETTY_REFRESH_MILLIS = 30_000;

  private static final Pattern NMT_TOTAL =
      Pattern.compile("^Total: reserved=(\\d+)\\w*, committed=(\\d+)", Pattern.MULTILINE);
  private static final Pattern NMT_CATEGORY =
      Pattern.compile("^-\\s+(.+?) \\(reserved=(\\d+)\\w*, committed=(\\d+)", Pattern.MULTILINE);

  /** The reflective targets that failed, each logged at WARN once ({@link #cannotReflect}). */
  private static final Set<String> REPORTED = ConcurrentHashMap.newKeySet();

  private static final Map<BufferAllocator, String> REGISTERED =
      java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());

  private final Object nettyLock = new Object();
  private Map<PooledByteBufAllocator, String> netty = new IdentityHashMap<>();
  private long nettyRefreshed;
  private volatile boolean nmtOff;

  private final HeapResidency heap = new HeapResidency();

  /** A ledger reading this process. */
  public LedgerReader() {}

  /**
   * Runs every reflective look-up a reading makes once (Spark's netty allocators, netty's cleaner
   * mode, Spark SQL's Arrow allocator), so that one that fails is reported by the executor's start,
   * at WARN, naming the class, field or method and the error, rather than by its first reading.
   *
   * @return the targets that have failed so far (logged already), for tests
   */
  public static Set<String> checkReflection() {
    findNettyAllocators();
    nettyNoCleaner();
    arrowJavaBytes();
    return Set.copyOf(REPORTED);
  }

  /**
   * A reflective read of {@code target} failed: logged at WARN the first time for that target,
   * with the error (unwrapped from reflection's wrappers) and what the ledger leaves out, at DEBUG
   * after that.
   */
  static void cannotReflect(String target, Throwable e, String consequence) {
    Throwable cause = e;
    while ((cause instanceof java.lang.reflect.InvocationTargetException
            || cause instanceof ExceptionInInitializerError)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (REPORTED.add(target)) {
      LOG.warn("nativepool: ledger: cannot read {}: {}; {}", target, cause, consequence);
    } else {
      LOG.debug("nativepool: ledger: cannot read {}", target, e);
    }
  }

  /**
   * Counts {@code allocator}'s allocated bytes in {@value #ARROW_JAVA} while it is reachable (held
   * weakly): for Arrow Java allocators an engine creates outside the plugin's task allocators.
   */
  public static void registerArrowAllocator(String name, BufferAllocator allocator) {
    REGISTERED.put(allocator, name);
  }

  /**
   * Whether a part named in a sample's ledger (which carries the parts' names, not their kinds) is
   * memory of its own that adds up to the resident set: the resident parts and {@value
   * #UNEXPLAINED}; not {@value #RSS}, the accounting parts, the heap's used bytes, the heap's
   * committed bytes when {@code heapResident} (the sample has {@value #JVM_HEAP_RESIDENT}), or a
   * netty pool's figures other than its resident bytes ({@code netty.<pool>.resident}, the one it
   * adds).
   */
  public static boolean adds(String part, boolean heapResident) {
    switch (part) {
      case RSS,
          NATIVE_RESERVED,
          NATIVE_HELD,
          NATIVE_SLACK,
          LEAKED_RESIDENT,
          JVM_HEAP_USED,
          JVM_HEAP_AFTER_GC,
          GUARD_OFF_HEAP_BALLAST,
          SPARK_OFF_HEAP_USED:
        return false;
      case JVM_HEAP_COMMITTED:
        return !heapResident;
      default:
        return !part.startsWith(NETTY_PREFIX) || part.endsWith(".resident");
    }
  }

  /**
   * What the heap would hold right after a young collection: a young pool (its name says Eden,
   * Survivor or Young) as its last collection left it ({@code
   * MemoryPoolMXBean.getCollectionUsage}), any other heap pool as it is now (an old generation,
   * which only collections of its own, rare with G1, would report, holds what the young
   * collections promoted and the large objects allocated in it since; a collector with one pool
   * counts whole). -1 if no pool says.
   */
  public static long heapAfterGc() {
    long sum = 0;
    boolean any = false;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() != MemoryType.HEAP || !pool.isValid()) {
        continue;
      }
      String n = pool.getName().toLowerCase(Locale.ROOT);
      boolean young = n.contains("eden") || n.contains("survivor") || n.contains("young");
      MemoryUsage u = young ? pool.getCollectionUsage() : pool.getUsage();
      if (u != null) {
        sum += u.getUsed();
        any = true;
      }
    }
    return any ? sum : -1;
  }

  /** Reads every part now. Never throws for a part it cannot read: that part is left out. */
  public LedgerSnapshot read() {
    return read(Natives.processStats(), Natives.processArrowStats());
  }

  /**
   * Reads every part now, taking the native figures from {@code process} and {@code arrow} (one
   * reading the caller shares with its gauges) instead of reading them again.
   */
  public LedgerSnapshot read(ProcessStats process, ArrowProcessStats arrow) {
    long[] p = process.toArray();
    long[] a = arrow.toArray();
    MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
    long heapResident = heapResident(heap.getMax(), heap.getCommitted());
    long metaspace = 0;
    long code = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() != MemoryType.NON_HEAP || !pool.isValid()) {
        continue;
      }
      String n = pool.getName();
      if (n.equals("Metaspace")) {
        metaspace += pool.getUsage().getCommitted();
      } else if (codeCachePool(n)) {
        code += pool.getUsage().getCommitted();
      }
    }
    long direct = 0;
    long mapped = 0;
    for (BufferPoolMXBean b : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
      if (b.getName().equals("direct")) {
        direct += Math.max(0, b.getMemoryUsed());
      } else if (b.getName().startsWith("mapped")) {
        mapped += Math.max(0, b.getMemoryUsed());
      }
    }
    Parts netty = new Parts();
    long nettyUnsafe = readNetty(netty);
    long arrowJava = arrowJavaBytes();
    Map<String, Long> nmt = nmt();

    // In display order: the JVM, Spark's transport, Arrow Java, native memory, the Go runtime.
    Parts parts = new Parts();
    if (heapResident >= 0) {
      parts.put(JVM_HEAP_RESIDENT, heapResident, Kind.RESIDENT);
      parts.put(JVM_HEAP_COMMITTED, heap.getCommitted(), Kind.DETAIL);
    } else {
      parts.put(JVM_HEAP_COMMITTED, heap.getCommitted(), Kind.RESIDENT);
    }
    parts.put(JVM_HEAP_USED, heap.getUsed(), Kind.DETAIL);
    long afterGc = heapAfterGc();
    if (afterGc >= 0) {
      parts.put(JVM_HEAP_AFTER_GC, afterGc, Kind.DETAIL);
    }
    parts.put(JVM_METASPACE, metaspace, Kind.RESIDENT);
    parts.put(JVM_CODE_CACHE, code, Kind.RESIDENT);
    if (nmt != null) {
      long threads = nmt.getOrDefault("Thread", 0L);
      long gc = nmt.getOrDefault("GC", 0L);
      long other = nmt.getOrDefault("Other", 0L);
      long rest =
          nmt.getOrDefault("Total", 0L)
              - nmt.getOrDefault("Java Heap", 0L)
              - nmt.getOrDefault("Code", 0L)
              - threads
              - gc
              - other
              - metaspace;
      parts.put(JVM_THREADS, threads, Kind.RESIDENT);
      parts.put(JVM_GC, Math.max(0, gc - G1_MARK_STACK), Kind.RESIDENT);
      parts.put(JVM_NATIVE, Math.max(0, rest), Kind.RESIDENT);
      parts.put(JVM_UNSAFE, Math.max(0, other - direct - nettyUnsafe - arrowJava), Kind.RESIDENT);
    }
    parts.put(JVM_DIRECT, direct, Kind.RESIDENT);
    parts.put(JVM_MAPPED, mapped, Kind.RESIDENT);
    parts.putAll(netty);
    parts.put(ARROW_JAVA, arrowJava, Kind.RESIDENT);
    parts.put(NATIVE_RESERVED, p[ProcessStat.RESERVED.ordinal()], Kind.ACCOUNTING);
    parts.put(NATIVE_HELD, p[ProcessStat.HELD.ordinal()], Kind.ACCOUNTING);
    parts.put(NATIVE_SLACK, p[ProcessStat.SLACK.ordinal()], Kind.ACCOUNTING);
    parts.put(LEAKED_RESIDENT, p[ProcessStat.LEAKED_RESIDENT.ordinal()], Kind.ACCOUNTING);
    parts.put(
        NATIVE_ALLOCATED,
        a[ArrowProcessStat.ALLOCATED.ordinal()] + a[ArrowProcessStat.LINGERING.ordinal()],
        Kind.RESIDENT);
    parts.put(GO_HEAP_IN_USE, p[ProcessStat.GO_HEAP_IN_USE.ordinal()], Kind.RESIDENT);
    parts.put(GO_HEAP_IDLE, p[ProcessStat.GO_HEAP_IDLE.ordinal()], Kind.RESIDENT);
    parts.put(GO_STACKS, p[ProcessStat.GO_STACKS.ordinal()], Kind.RESIDENT);
    parts.put(GO_GC_META, p[ProcessStat.GO_GC_META.ordinal()], Kind.RESIDENT);
    parts.put(GO_OTHER, p[ProcessStat.GO_OTHER.ordinal()], Kind.RESIDENT);
    parts.put(MALLOC_RETAINED, p[ProcessStat.MALLOC_RETAINED.ordinal()], Kind.RESIDENT);
    long rss = a[ArrowProcessStat.RSS.ordinal()];
    if (rss >= 0) {
      for (Map.Entry<String, Long> e : ChildProcesses.read().entrySet()) {
        parts.put(e.getKey(), e.getValue(), Kind.RESIDENT);
        rss += e.getValue();
      }
    }
    long left = rss < 0 ? Long.MAX_VALUE : rss - parts.residentSum();
    for (Map.Entry<String, Long> e :
        ExecutorState.sparkConsumers().offHeapByEngine().entrySet()) {
      if (e.getKey().equals("spark") && nmt != null) {
        continue; // Tungsten's pages: in jvm.unsafe, which Native Memory Tracking counts
      }
      long resident = Math.max(0, Math.min(e.getValue(), left));
      parts.put(OFF_HEAP_PREFIX + e.getKey(), resident, Kind.RESIDENT);
      left -= resident;
    }
    long offHeapBallast = p[ProcessStat.GUARD_OFF_HEAP_BALLAST.ordinal()];
    if (offHeapBallast > 0 || ExecutorState.sparkConsumers().tasks() > 0) {
      parts.put(GUARD_OFF_HEAP_BALLAST, offHeapBallast, Kind.ACCOUNTING);
    }
    parts.put(SPARK_OFF_HEAP_USED, sparkOffHeapUsed(), Kind.ACCOUNTING);
    return new LedgerSnapshot(System.currentTimeMillis(), rss, parts.bytes, parts.kinds);
  }

  /**
   * Spark's off-heap execution and storage memory in use now, from the executor's memory manager;
   * -1 (left out) without a SparkEnv or without off-heap memory.
   */
  private static long sparkOffHeapUsed() {
    SparkEnv env = SparkEnv.get();
    if (env == null || !env.conf().getBoolean("spark.memory.offHeap.enabled", false)) {
      return -1;
    }
    org.apache.spark.memory.MemoryManager mm = env.memoryManager();
    return mm.offHeapExecutionMemoryUsed() + mm.offHeapStorageMemoryUsed();
  }

  /**
   * Whether a memory pool of that name is (part of) the JIT's code cache: the segmented cache's
   * {@code CodeHeap '…'} pools, or the one pool of an unsegmented cache, which JDK 17 names {@code
   * CodeCache} (C1 only, {@code -XX:-SegmentedCodeCache}, or a cache under 240 MiB) and older JDKs
   * {@code Code Cache}.
   */
  static boolean codeCachePool(String name) {
    return name.startsWith("CodeHeap") || name.equals("CodeCache") || name.equals("Code Cache");
  }

  /** Parts being read: bytes and kind by name, in display order. */
  private static final class Parts {
    final Map<String, Long> bytes = new LinkedHashMap<>();
    final Map<String, Kind> kinds = new LinkedHashMap<>();

    /** Adds a part unless its figure is unknown (negative). */
    void put(String part, long n, Kind kind) {
      if (n >= 0) {
        bytes.put(part, n);
        kinds.put(part, kind);
      }
    }

    void putAll(Parts other) {
      bytes.putAll(other.bytes);
      kinds.putAll(other.kinds);
    }

    /** The sum of the resident parts so far. */
    long residentSum() {
      long sum = 0;
      for (Map.Entry<String, Long> e : bytes.entrySet()) {
        if (kinds.get(e.getKey()) == Kind.RESIDENT) {
          sum += e.getValue();
        }
      }
      return sum;
    }
  }

  /**
   * The heap's resident bytes ({@link HeapResidency}): found once by a full parse of {@code
   * /proc/self/smaps}, then read from the heap's range only, which is a few entries when the heap
   * sits at low addresses (compressed oops).
   */
  private long heapResident(long max, long committed) {
    return heap.residentNow(max, committed);
  }

  /**
   * Native Memory Tracking's committed bytes by category ("Total", "Java Heap", "Thread", …), or
   * null when NMT is off or cannot be read (then never asked again).
   */
  private Map<String, Long> nmt() {
    if (nmtOff) {
      return null;
    }
    String out;
    try {
      MBeanServer server = ManagementFactory.getPlatformMBeanServer();
      out =
          (String)
              server.invoke(
                  new ObjectName("com.sun.management:type=DiagnosticCommand"),
                  "vmNativeMemory",
                  new Object[] {new String[] {"summary", "scale=b"}},
                  new String[] {String[].class.getName()});
    } catch (Exception | LinkageError e) {
      LOG.debug("nativepool: ledger: cannot read Native Memory Tracking", e);
      nmtOff = true;
      return null;
    }
    Map<String, Long> m = parseNmt(out);
    if (m == null) {
      nmtOff = true; // "Native memory tracking is not enabled"
    }
    return m;
  }

  /**
   * Parses a {@code VM.native_memory summary scale=b} report: committed bytes by category, plus
   * "Total"; null if it has no total (NMT off).
   */
  static Map<String, Long> parseNmt(String report) {
    if (report == null) {
      return null;
    }
    Matcher t = NMT_TOTAL.matcher(report);
    if (!t.find()) {
      return null;
    }
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("Total", Long.parseLong(t.group(2)));
    Matcher c = NMT_CATEGORY.matcher(report);
    while (c.find()) {
      m.merge(c.group(1).trim(), Long.parseLong(c.group(3)), Long::sum);
    }
    return m;
  }

  /**
   * Adds the netty parts; returns the direct chunk bytes that are resident outside the JVM's direct
   * buffer pool (allocated without a cleaner), which NMT counts under "Other".
   */
  private long readNetty(Parts parts) {
    Map<PooledByteBufAllocator, String> pools = nettyAllocators();
    boolean noCleaner = nettyNoCleaner();
    long unsafe = 0;
    for (Map.Entry<PooledByteBufAllocator, String> e : pools.entrySet()) {
      try {
        PooledByteBufAllocatorMetric m = e.getKey().metric();
        long directChunks = m.usedDirectMemory();
        long heapChunks = m.usedHeapMemory();
        long used = used(m.directArenas()) + used(m.heapArenas());
        String base = NETTY_PREFIX + e.getValue();
        parts.put(base + ".direct", directChunks, Kind.DETAIL);
        parts.put(base + ".heap", heapChunks, Kind.DETAIL);
        parts.put(base + ".used", used, Kind.DETAIL);
        if (noCleaner) {
          // Allocated whole, backed page by page as runs are handed out: count what is resident.
          long resident = resident(m.directArenas());
          parts.put(
              base + ".resident", resident < 0 ? directChunks : resident, Kind.RESIDENT);
          unsafe += Math.max(0, directChunks);
        }
      } catch (RuntimeException ex) {
        LOG.debug("nativepool: ledger: cannot read netty pool {}", e.getValue(), ex);
      }
    }
    return unsafe;
  }

  /**
   * The resident bytes of the direct arenas' chunks ({@link PageResidency}), plus their huge
   * (unpooled) allocations counted whole; -1 when a chunk's memory cannot be found or pagemap
   * cannot be read (then the caller counts the chunks whole).
   */
  private static long resident(List<PoolArenaMetric> arenas) {
    Field memory = chunkMemoryField();
    if (memory == null) {
      return -1;
    }
    long resident = 0;
    for (PoolArenaMetric a : arenas) {
      long chunks = 0;
      for (PoolChunkListMetric list : a.chunkLists()) {
        for (PoolChunkMetric c : list) {
          chunks += c.chunkSize();
          try {
            if (!(memory.get(c) instanceof java.nio.ByteBuffer b) || !b.isDirect()) {
              return -1;
            }
            long r =
                PageResidency.of(
                    io.netty.util.internal.PlatformDependent.directBufferAddress(b), b.capacity());
            if (r < 0) {
              return -1;
            }
            resident += r;
          } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            cannotReflect(
                "io.netty.buffer.PoolChunk.memory", e, "netty's direct chunks are counted whole");
            return -1;
          }
        }
      }
      resident += Math.max(0, a.numActiveBytes() - chunks); // huge allocations
    }
    return resident;
  }

  /** {@code io.netty.buffer.PoolChunk.memory}, accessible; null (reported once) if not found. */
  private static Field chunkMemoryField() {
    try {
      Field f = Class.forName("io.netty.buffer.PoolChunk").getDeclaredField("memory");
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      cannotReflect(
          "io.netty.buffer.PoolChunk.memory", e, "netty's direct chunks are counted whole");
      return null;
    }
  }

  /** Bytes in use in the arenas' chunks: chunk sizes less their free bytes, plus huge ones. */
  private static long used(List<PoolArenaMetric> arenas) {
    long used = 0;
    for (PoolArenaMetric a : arenas) {
      long chunks = 0;
      long free = 0;
      for (PoolChunkListMetric list : a.chunkLists()) {
        for (PoolChunkMetric c : list) {
          chunks += c.chunkSize();
          free += c.freeBytes();
        }
      }
      // numActiveBytes counts every chunk's size plus the huge (unpooled) allocations.
      long huge = Math.max(0, a.numActiveBytes() - chunks);
      used += chunks - free + huge;
    }
    return used;
  }

  private static boolean nettyNoCleaner() {
    try {
      return io.netty.util.internal.PlatformDependent.useDirectBufferNoCleaner();
    } catch (LinkageError e) {
      cannotReflect(
          "io.netty.util.internal.PlatformDependent.useDirectBufferNoCleaner()",
          e,
          "netty's direct chunks are taken as counted in " + JVM_DIRECT);
      return false;
    }
  }

  /** Spark's pooled netty allocators by name, looked up again every so often. */
  private Map<PooledByteBufAllocator, String> nettyAllocators() {
    synchronized (nettyLock) {
      long now = System.currentTimeMillis();
      if (now - nettyRefreshed >= NETTY_REFRESH_MILLIS || netty.isEmpty()) {
        nettyRefreshed = now;
        netty = findNettyAllocators();
      }
      return netty;
    }
  }

  /**
   * Finds the pooled allocators Spark's transport created: the shared ones of {@code NettyUtils},
   * and those of the RPC environment's and the block transfer service's client factories and
   * servers (which are the shared ones unless {@code spark.network.sharedByteBufAllocators.enabled}
   * is false). Reflection on Spark's private fields: a Spark that moved them gives fewer pools,
   * never an error, and what was not found is logged once ({@link #cannotReflect}).
   */
  static Map<PooledByteBufAllocator, String> findNettyAllocators() {
    Map<PooledByteBufAllocator, String> out = new IdentityHashMap<>();
    String sharedField = "org.apache.spark.network.util.NettyUtils._sharedPooledByteBufAllocator";
    try {
      Class<?> utils = Class.forName("org.apache.spark.network.util.NettyUtils");
      Object shared = field(utils, null, "_sharedPooledByteBufAllocator");
      if (shared instanceof PooledByteBufAllocator[] arr) {
        synchronized (utils) { // NettyUtils creates them under its class lock
          if (arr[0] != null) {
            out.put(arr[0], "shared");
          }
          if (arr[1] != null) {
            out.putIfAbsent(arr[1], "sharedNoCache");
          }
        }
      } else {
        cannotReflect(
            sharedField,
            new ClassCastException(
                (shared == null ? "null" : shared.getClass().getName())
                    + " is not a "
                    + PooledByteBufAllocator.class.getName()
                    + "[]"),
            "the netty.shared parts are left out");
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      cannotReflect(sharedField, e, "the netty.shared parts are left out");
    }
    SparkEnv env = SparkEnv.get();
    if (env != null) {
      addTransport(out, "rpc", env.rpcEnv());
      try {
        addTransport(out, "blockTransfer", env.blockManager().blockTransferService());
      } catch (RuntimeException | LinkageError e) {
        cannotReflect(
            "SparkEnv.blockManager().blockTransferService()",
            e,
            "the netty.blockTransfer parts are left out");
      }
    }
    return out;
  }

  /**
   * Adds the allocators of {@code owner}'s fields that are a {@code TransportClientFactory} or
   * {@code TransportServer}, named {@code <name>.<field>} unless already named.
   */
  private static void addTransport(
      Map<PooledByteBufAllocator, String> out, String name, Object owner) {
    if (owner == null) {
      return;
    }
    for (Class<?> c = owner.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        String type = f.getType().getName();
        if (!type.equals("org.apache.spark.network.client.TransportClientFactory")
            && !type.equals("org.apache.spark.network.server.TransportServer")) {
          continue;
        }
        try {
          f.setAccessible(true);
          Object transport = f.get(owner);
          if (transport != null
              && field(transport.getClass(), transport, "pooledAllocator")
                  instanceof PooledByteBufAllocator a) {
            out.putIfAbsent(a, name + "." + f.getName().replaceAll("\\W", ""));
          }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
          cannotReflect(
              c.getName() + "." + f.getName() + ": " + type + ".pooledAllocator",
              e,
              "the netty." + name + " parts are left out");
        }
      }
    }
  }

  private static Object field(Class<?> c, Object owner, String name)
      throws ReflectiveOperationException {
    Field f = c.getDeclaredField(name);
    f.setAccessible(true);
    return f.get(owner);
  }

  /**
   * The bytes Arrow Java allocators hold: the plugin's task allocators (open and lingering),
   * Spark's root allocator ({@code ArrowUtils.rootAllocator}, if Spark SQL created it) and the
   * registered ones.
   */
  private static long arrowJavaBytes() {
    long sum = TaskArrowAllocators.javaAllocatedBytes();
    String target = "org.apache.spark.sql.util.ArrowUtils$.rootAllocator()";
    String consequence = "Spark SQL's Arrow allocator is left out of " + ARROW_JAVA;
    try {
      Class<?> utils = Class.forName("org.apache.spark.sql.util.ArrowUtils$");
      Object module = utils.getField("MODULE$").get(null);
      Object root = utils.getMethod("rootAllocator").invoke(module);
      if (root instanceof BufferAllocator a) {
        sum += a.getAllocatedMemory();
      } else {
        cannotReflect(
            target,
            new ClassCastException(
                (root == null ? "null" : root.getClass().getName())
                    + " is not this JVM's "
                    + BufferAllocator.class.getName()),
            consequence);
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      // Spark SQL is on every executor's classpath: its Arrow failing to start is worth a WARN
      // (an Arrow that does not match Spark's fails here first).
      cannotReflect(target, e, consequence);
    }
    synchronized (REGISTERED) {
      for (BufferAllocator b : REGISTERED.keySet()) {
        sum += b.getAllocatedMemory();
      }
    }
    return sum;
  }
}
