package org.nativepool.spark.example;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.apache.spark.SparkEnv;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.jni.ProcessStats;

/**
 * Samples the process every {@value #PERIOD_MS} ms on a daemon thread, and writes the samples as
 * CSV for {@code examples/chart}: {@code t_ms,reserved,allocated,rss,held} (bytes), followed by
 * extra columns the chart ignores. In this demo:
 *
 * <ul>
 *   <li>{@code reserved}: Spark's off-heap execution memory in use over the process, as Spark sees
 *       it ({@code MemoryManager.offHeapExecutionMemoryUsed}): the native pools' share plus Spark's
 *       own Tungsten pages (the aggregation);
 *   <li>{@code allocated}: bytes in live buffers of the native sorters' Go allocators;
 *   <li>{@code rss}: the process's resident set ({@code VmRSS} of {@code /proc/self/status}) above
 *       the baseline given to {@link #start};
 *   <li>{@code held}: bytes the native pools hold from Spark;
 *   <li>{@code native_reserved}, {@code sorter_reserved}, {@code go_runtime}: the native pools'
 *       reservations, the sorters' own, and what the Go runtime holds mapped;
 *   <li>{@code rss_abs}: RSS itself; {@code untracked}: RSS growth less {@code reserved} and the Go
 *       runtime's growth, the JVM's own memory that nothing accounts for (negative while reserved
 *       memory is not yet touched); {@code cgroup_anon}: the JVM's memory cgroup's anonymous memory
 *       (-1 without one); {@code direct}: the JVM's direct buffers in use; {@code malloc_retained}:
 *       free bytes glibc's malloc keeps in its arenas ({@code mallinfo2}, -1 unknown), the part of
 *       {@code untracked} that is memory C code freed but the allocator kept; {@code burst}: the
 *       demo's burst of direct buffers held now ({@link Burst}); {@code ballast}: what the pod
 *       guard keeps from Spark's consumers: native consumers' spills the pools keep, and Spark's
 *       free off-heap memory the guard holds.
 * </ul>
 *
 * <p>Peaks are kept for the report. Started once, stopped once; safe to read after {@link #stop()}.
 */
final class MemorySampler extends CsvSampler {
  static final long PERIOD_MS = 50;

  private final long baselineRss;
  private final long start = System.nanoTime();

  final AtomicLong samples = new AtomicLong();
  final AtomicLong peakRss = new AtomicLong();
  final AtomicLong peakSparkOffHeap = new AtomicLong();
  final AtomicLong peakNativeReserved = new AtomicLong();
  final AtomicLong peakNativeHeld = new AtomicLong();
  final AtomicLong peakSorterReserved = new AtomicLong();
  final AtomicLong peakAllocated = new AtomicLong();
  final AtomicLong peakGoRuntime = new AtomicLong();

  /** Peak anonymous memory of the JVM's memory cgroup (-1 without one). */
  final AtomicLong peakCgroupAnon = new AtomicLong(-1);

  /**
   * Peak of the JVM's own untracked memory: RSS above the baseline less what Spark counts off-heap
   * and less the Go runtime's growth, sampled.
   */
  final AtomicLong peakUntracked = new AtomicLong(Long.MIN_VALUE);

  /**
   * At the sample of {@link #peakUntracked}: the growth of malloc's retained free bytes over the
   * first sample ({@code MALLOC_RETAINED}; 0 if unknown), the C allocator's part of it.
   */
  volatile long mallocRetainedAtUntrackedPeak;

  /** Highest {@code MALLOC_RETAINED} sampled, bytes (-1 unknown). */
  final AtomicLong peakMallocRetained = new AtomicLong(-1);

  private long baselineMalloc = -1;

  /**
   * Peak of the JVM's direct buffers ({@code java.nio}'s "direct" pool), sampled. Spark's own
   * direct buffers (its spill-file readers') are not in it: with {@code jdk.internal.ref} open,
   * {@code Platform.allocateDirectBuffer} wraps {@code Unsafe.allocateMemory} instead.
   */
  final AtomicLong peakDirect = new AtomicLong();

  private final BufferPoolMXBean direct =
      ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
          .filter(b -> b.getName().equals("direct"))
          .findFirst()
          .orElse(null);

  /** Samples whose summed allocated exceeded the summed sorter reservations. */
  final AtomicLong sumViolations = new AtomicLong();

  private final long baselineGo;
  private final TruePeaks.Cgroup cgroup;
  private final LongSupplier burst;

  /** Peak of the pod guard's ballast, sampled. */
  final AtomicLong peakBallast = new AtomicLong();

  private MemorySampler(
      long baselineRss,
      long baselineGo,
      TruePeaks.Cgroup cgroup,
      LongSupplier burst,
      Path csvPath,
      long periodMs)
      throws IOException {
    super(
        csvPath,
        "t_ms,reserved,allocated,rss,held,native_reserved,sorter_reserved,go_runtime,rss_abs,"
            + "untracked,cgroup_anon,direct,malloc_retained,burst,ballast",
        periodMs,
        "nativepool-demo-sampler",
        "the samples");
    this.baselineRss = baselineRss;
    this.baselineGo = baselineGo;
    this.cgroup = cgroup;
    this.burst = burst;
  }

  /**
   * Starts sampling every {@code periodMs} ms ({@link Long#MAX_VALUE}: only the first sample and
   * the one {@link #close()} takes); RSS is written relative to {@code baselineRss}, and the
   * untracked figure takes the Go runtime's growth over {@code baselineGo}. {@code cgroup} (may be
   * null) is the JVM's memory cgroup, whose anonymous memory is sampled too; {@code burst} reads
   * the bytes of the demo's burst held now.
   */
  static MemorySampler start(
      long baselineRss,
      long baselineGo,
      TruePeaks.Cgroup cgroup,
      LongSupplier burst,
      Path csvPath,
      long periodMs)
      throws IOException {
    MemorySampler s = new MemorySampler(baselineRss, baselineGo, cgroup, burst, csvPath, periodMs);
    s.sample(); // one sample at t = 0
    s.startThread();
    return s;
  }

  @Override
  synchronized void sample() {
    if (failed()) {
      return;
    }
    long rss = readRss();
    long[] s = SortBridge.sample();
    ProcessStats p = Natives.processStats();
    long spark = sparkOffHeapUsed();
    long allocated = s[SortBridge.SAMPLE_ALLOCATED];
    long sorterReserved = s[SortBridge.SAMPLE_RESERVED];
    if (allocated > sorterReserved) {
      sumViolations.incrementAndGet();
    }
    max(peakRss, rss);
    max(peakSparkOffHeap, spark);
    max(peakNativeReserved, p.reserved());
    max(peakNativeHeld, p.held());
    max(peakSorterReserved, sorterReserved);
    max(peakAllocated, allocated);
    max(peakGoRuntime, s[SortBridge.SAMPLE_GO_RUNTIME]);
    long untracked =
        rss - baselineRss - spark - Math.max(0, s[SortBridge.SAMPLE_GO_RUNTIME] - baselineGo);
    long malloc = p.mallocRetained();
    if (baselineMalloc < 0) {
      baselineMalloc = malloc;
    }
    max(peakMallocRetained, malloc);
    if (untracked > peakUntracked.get()) {
      peakUntracked.set(untracked); // only this thread (sample() is synchronized) writes it
      mallocRetainedAtUntrackedPeak =
          malloc >= 0 && baselineMalloc >= 0 ? malloc - baselineMalloc : 0;
    }
    long directUsed = direct == null ? 0 : direct.getMemoryUsed();
    max(peakDirect, directUsed);
    long anon = cgroup == null ? -1 : cgroup.anon();
    max(peakCgroupAnon, anon);
    long ballast = p.get(ProcessStat.GUARD_BALLAST) + p.get(ProcessStat.GUARD_OFF_HEAP_BALLAST);
    max(peakBallast, ballast);
    samples.incrementAndGet();
    long t = (System.nanoTime() - start) / 1_000_000;
    writeRow(
        String.join(
            ",",
            List.of(
                Long.toString(t),
                Long.toString(spark),
                Long.toString(allocated),
                Long.toString(rss - baselineRss),
                Long.toString(p.held()),
                Long.toString(p.reserved()),
                Long.toString(sorterReserved),
                Long.toString(s[SortBridge.SAMPLE_GO_RUNTIME]),
                Long.toString(rss),
                Long.toString(untracked),
                Long.toString(anon),
                Long.toString(directUsed),
                Long.toString(malloc),
                Long.toString(burst.getAsLong()),
                Long.toString(ballast))));
  }

  /** Spark's off-heap execution memory in use, over the process (0 without a SparkEnv). */
  static long sparkOffHeapUsed() {
    SparkEnv env = SparkEnv.get();
    return env == null ? 0 : env.memoryManager().offHeapExecutionMemoryUsed();
  }

  /** {@code VmRSS} of {@code /proc/self/status}, in bytes. */
  /**
   * The growth of malloc's retained free bytes at its highest sample over its first reading:
   * memory freed and kept by glibc, which counts in RSS without being anyone's; 0 when unknown.
   */
  synchronized long mallocRetainedGrowth() {
    long peak = peakMallocRetained.get();
    return peak >= 0 && baselineMalloc >= 0 ? Math.max(0, peak - baselineMalloc) : 0;
  }

  static long readRss() {
    long rss = TruePeaks.rss();
    if (rss < 0) {
      throw new IllegalStateException("sortdemo: no VmRSS readable in /proc/self/status");
    }
    return rss;
  }

  private static void max(AtomicLong a, long v) {
    a.accumulateAndGet(v, Math::max);
  }
}
