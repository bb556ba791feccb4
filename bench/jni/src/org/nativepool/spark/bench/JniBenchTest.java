package org.nativepool.spark.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.SparkConf;
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.memory.UnifiedMemoryManager;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.PoolKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.memory.Reservation;
import org.nativepool.spark.memory.SparkTaskUpstream;
import org.nativepool.spark.memory.TaskPool;

/**
 * A JMH-free benchmark of the JNI bridge with Spark's real {@code TaskMemoryManager}, run by
 * {@code mvn -pl spark -Pbench test} (see README.md beside this tree). Each case runs in
 * the same JVM, interleaved round by round, so the figures are side by side:
 *
 * <ul>
 *   <li>ns per 8 KiB tryGrow + shrink pair from Java, exact mode (chunk 0: every grow and shrink
 *       is one Spark call) vs 8 MiB chunks (Spark is called once per chunk), the latter with the
 *       reservation's local slack (64 KiB quantum: the pair stays in Java) and without it
 *       (reservationSlack 0: every call crosses into Go);
 *   <li>Spark acquires per GiB: grow one reservation to 1 GiB in 8 KiB steps and count the pool's
 *       ACQUIRE_CALLS.
 * </ul>
 */
@Tag("bench")
class JniBenchTest {
  private static final long KIB = 1L << 10;
  private static final long MIB = 1L << 20;
  private static final long GIB = 1L << 30;
  private static final int WARMUP_PAIRS = 200_000;
  private static final int PAIRS = Integer.getInteger("nativepool.bench.pairs", 1_000_000);
  private static final int ROUNDS = Integer.getInteger("nativepool.bench.rounds", 7);

  private static long nextTask = 9_000;

  /** One case: a pool kind, chunk size and reservation slack quantum. */
  private static final class Case {
    final PoolKind kind;
    final long chunk;
    final long slack;
    final List<Double> nsPerPair = new ArrayList<>();
    long acquiresPerGiB;
    long releasesPerGiB;

    Case(PoolKind kind, long chunk, long slack) {
      this.kind = kind;
      this.chunk = chunk;
      this.slack = slack;
    }

    String name() {
      if (chunk == 0) {
        return kind + "/chunk=0 (exact)";
      }
      return kind + "/chunk=" + (chunk / MIB) + "MiB slack=" + (slack / KIB) + "KiB";
    }
  }

  /** A fresh task on its own memory managers, with one pool and one reservation. */
  private static final class Task implements AutoCloseable {
    final TaskMemoryManager tmm;
    final SparkTaskUpstream up;
    final TaskPool pool;
    final Reservation res;

    Task(Case c) {
      SparkConf conf =
          new SparkConf(false)
              .set("spark.memory.offHeap.enabled", "true")
              .set("spark.memory.offHeap.size", Long.toString(2 * GIB));
      UnifiedMemoryManager umm = new UnifiedMemoryManager(conf, 256 * MIB, 128 * MIB, 1);
      long id = nextTask++;
      tmm = new TaskMemoryManager(umm, id);
      up = new SparkTaskUpstream(tmm, id);
      pool = TaskPool.open(up, id, c.kind, 2 * GIB, c.chunk);
      pool.setReservationSlack(c.slack);
      res = pool.newReservation("bench", false, null);
    }

    @Override
    public void close() {
      pool.close();
      up.close();
      long leaked = tmm.cleanUpAllAllocatedMemory();
      if (leaked != 0) {
        throw new AssertionError("Spark still held " + leaked + " bytes");
      }
    }
  }

  private static long pairs(Reservation r, int n) {
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      if (!r.tryGrow(8 * KIB)) {
        throw new AssertionError("refused: " + r.lastRefusal());
      }
      r.shrink(8 * KIB);
    }
    return System.nanoTime() - t0;
  }

  /**
   * One JNI call per iteration and no upcall: the floor under every pair that crosses
   * ({@code nativeSize()}, which always crosses; {@code size()} is a Java read).
   */
  private static long sizeCalls(Reservation r, int n) {
    long t0 = System.nanoTime();
    long sink = 0;
    for (int i = 0; i < n; i++) {
      sink += r.nativeSize();
    }
    if (sink != 0) {
      throw new AssertionError("empty reservation has size " + sink);
    }
    return System.nanoTime() - t0;
  }

  /**
   * The Java floor of any accounting: an 8 KiB add and subtract on one {@link AtomicLong}, the
   * pair with nothing behind it (no monitor, no pool, no crossing). The 64 KiB-slack pair is
   * measured against it.
   */
  private static long atomicPairs(AtomicLong counter, int n) {
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      counter.addAndGet(8 * KIB);
      counter.addAndGet(-8 * KIB);
    }
    if (counter.get() != 0) {
      throw new AssertionError("atomic pair left " + counter.get());
    }
    return System.nanoTime() - t0;
  }

  private static double median(List<Double> xs) {
    double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  @Test
  void tryGrowShrinkPairsAndSparkAcquiresPerGiB() throws IOException {
    Natives.ensureLoaded();
    long q = TaskPool.DEFAULT_RESERVATION_SLACK;
    List<Case> cases =
        Arrays.asList(
            new Case(PoolKind.GREEDY_UNIFIED, 0, q),
            new Case(PoolKind.GREEDY_UNIFIED, 8 * MIB, q),
            new Case(PoolKind.GREEDY_UNIFIED, 8 * MIB, 0),
            new Case(PoolKind.FAIR_UNIFIED, 0, q),
            new Case(PoolKind.FAIR_UNIFIED, 8 * MIB, q),
            new Case(PoolKind.FAIR_UNIFIED, 8 * MIB, 0));
    Case floorCase = new Case(PoolKind.GREEDY_UNIFIED, 8 * MIB, 0);

    for (Case c : cases) {
      try (Task t = new Task(c)) {
        pairs(t.res, WARMUP_PAIRS);
      }
    }
    List<Double> sizeNs = new ArrayList<>();
    List<Double> atomicNs = new ArrayList<>();
    AtomicLong counter = new AtomicLong();
    atomicPairs(counter, WARMUP_PAIRS);
    try (Task t = new Task(floorCase)) {
      sizeCalls(t.res, WARMUP_PAIRS);
    }
    for (int round = 0; round < ROUNDS; round++) {
      atomicNs.add((double) atomicPairs(counter, PAIRS) / PAIRS);
      try (Task t = new Task(floorCase)) {
        sizeNs.add((double) sizeCalls(t.res, PAIRS) / PAIRS);
      }
      for (Case c : cases) {
        try (Task t = new Task(c)) {
          long ns = pairs(t.res, PAIRS);
          c.nsPerPair.add((double) ns / PAIRS);
        }
      }
    }
    for (Case c : cases) {
      try (Task t = new Task(c)) {
        long steps = GIB / (8 * KIB);
        for (long i = 0; i < steps; i++) {
          if (!t.res.tryGrow(8 * KIB)) {
            throw new AssertionError("refused at step " + i + ": " + t.res.lastRefusal());
          }
        }
        c.acquiresPerGiB = t.pool.stats().acquireCalls();
        t.res.free();
        c.releasesPerGiB = t.pool.stats().releaseCalls();
      }
    }

    StringBuilder out = new StringBuilder();
    out.append(
        String.format(
            Locale.ROOT,
            "JNI bench: Java -> JNI -> Go pool -> JNI upcall -> Spark %s TaskMemoryManager%n"
                + "%d pairs x %d rounds per case, median (min..max); JVM %s%n",
            org.apache.spark.package$.MODULE$.SPARK_VERSION(),
            PAIRS,
            ROUNDS,
            System.getProperty("java.vm.version")));
    out.append(
        String.format(
            Locale.ROOT,
            "%-44s %10s %22s %10s %14s %14s%n",
            "case",
            "ns/pair",
            "(min..max)",
            "exact/this",
            "acquires/GiB",
            "releases/GiB"));
    for (Case c : cases) {
      double min = c.nsPerPair.stream().mapToDouble(Double::doubleValue).min().orElse(0);
      double max = c.nsPerPair.stream().mapToDouble(Double::doubleValue).max().orElse(0);
      double exact = 0;
      for (Case e : cases) {
        if (e.kind == c.kind && e.chunk == 0) {
          exact = median(e.nsPerPair);
        }
      }
      out.append(
          String.format(
              Locale.ROOT,
              "%-44s %10.1f %22s %9.1fx %14d %14d%n",
              c.name(),
              median(c.nsPerPair),
              String.format(Locale.ROOT, "(%.1f..%.1f)", min, max),
              exact / median(c.nsPerPair),
              c.acquiresPerGiB,
              c.releasesPerGiB));
    }
    out.append(
        String.format(
            Locale.ROOT,
            "%-44s %10.1f %22s%n",
            "floor: one nativeSize() call (one crossing)",
            median(sizeNs),
            String.format(
                Locale.ROOT,
                "(%.1f..%.1f)",
                sizeNs.stream().mapToDouble(Double::doubleValue).min().orElse(0),
                sizeNs.stream().mapToDouble(Double::doubleValue).max().orElse(0))));
    out.append(
        String.format(
            Locale.ROOT,
            "%-44s %10.1f %22s%n",
            "floor: a Java AtomicLong add+subtract pair",
            median(atomicNs),
            String.format(
                Locale.ROOT,
                "(%.1f..%.1f)",
                atomicNs.stream().mapToDouble(Double::doubleValue).min().orElse(0),
                atomicNs.stream().mapToDouble(Double::doubleValue).max().orElse(0))));
    PrintStream ps = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    ps.print(out);
    Path target = Paths.get(System.getProperty("nativepool.bench.out", "target/bench-jni.txt"));
    if (target.getParent() != null) {
      Files.createDirectories(target.getParent());
    }
    Files.write(target, out.toString().getBytes(StandardCharsets.UTF_8));
  }
}
