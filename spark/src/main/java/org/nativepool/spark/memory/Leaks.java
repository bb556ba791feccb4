package org.nativepool.spark.memory;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.nativepool.spark.jni.LeakKind;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.jni.Records;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leaks found at the end of recent tasks in this executor, for operators and tests: who
 * (task, consumer, and with {@code spark.nativepool.allocationSites} the caller that reserved
 * or allocated), what ({@link LeakKind}) and how many bytes, and how many of them are still resident.
 *
 * <p>Every leak is recorded once, by the side that finds it, in the Go library's one book ({@code
 * internal/bridge/leaks.go}): it counts in {@link ProcessStat#LEAKS} and {@link
 * ProcessStat#LEAKED_BYTES}, is logged at WARN ({@code nativepool: leak at task end: <consumer>
 * still held bytes}, with its task, kind, bytes, resident bytes and site), and is listed here. The
 * owners close in order at a task's end, each giving its bytes back before the next looks (Arrow
 * allocators before their reservations, reservations before the pool), so one leak is never
 * counted twice: an Arrow allocator's charge is not also its reservation's leak.
 *
 * <p>Static and safe for concurrent use; {@link #recent()} crosses into Go once.
 */
public final class Leaks {
  private static final Logger LOG = LoggerFactory.getLogger(Leaks.class);

  private Leaks() {}

  /**
   * One leak at a task's end.
   *
   * @param taskAttemptId the task attempt whose end found it
   * @param consumer the consumer's name, as it was registered
   * @param kind what leaked
   * @param bytes what the owner still held at the task's end
   * @param site where it was reserved or allocated ({@code pkg.Class.method(File.java:42)} for a
   *     Java caller, {@code function (file.go:12)} for Go), or "" when allocation sites are off
   * @param resident the part of {@code bytes} still allocated after the task, when it was recorded
   *     (0 for reservations); {@link ProcessStat#LEAKED_RESIDENT} follows it down as it is freed
   */
  public record Leak(
      long taskAttemptId, String consumer, LeakKind kind, long bytes, String site, long resident) {
    /** Checks the fields. */
    public Leak {
      Objects.requireNonNull(consumer, "consumer");
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(site, "site");
    }
  }

  /**
   * The last leaks recorded in this executor (at most 256), oldest first, loading the library if
   * needed.
   */
  public static List<Leak> recent() {
    Natives.ensureLoaded();
    return parse(Natives.recentLeaks());
  }

  /** Parses recentLeaks0's lines ({@code task\tconsumer\tkind\tbytes\tresident\tsite}). */
  static List<Leak> parse(String flat) {
    List<Leak> out = new ArrayList<>();
    for (String[] f : Records.parse(flat, 6, "recentLeaks0")) {
      out.add(
          new Leak(
              Long.parseLong(f[0]),
              f[1],
              LeakKind.of(f[2]),
              Long.parseLong(f[3]),
              f[5],
              Long.parseLong(f[4])));
    }
    return out;
  }

  /**
   * Records a leak Java found (see {@link Natives#reportLeak}); logs instead of throwing if the
   * library refuses it, so that a task's end never fails for a report.
   */
  public static void report(
      long taskAttemptId, String consumer, LeakKind kind, long bytes, long resident, String site) {
    try {
      Natives.reportLeak(taskAttemptId, consumer, kind, bytes, resident, site);
    } catch (RuntimeException e) {
      LOG.error(
          "nativepool: leak of {} bytes by '{}' in task {} not recorded",
          bytes,
          consumer,
          taskAttemptId,
          e);
    }
  }
}
