package org.nativepool.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leaks found at the end of recent tasks in this executor, for operators and tests: who
 * (task, consumer, and with {@value NativePoolSettings#ALLOCATION_SITES} the caller that reserved
 * or allocated), what ({@link Kind}) and how many bytes, and how many of them are still resident.
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
public final class NativeLeaks {
  private static final Logger LOG = LoggerFactory.getLogger(NativeLeaks.class);

  private NativeLeaks() {}

  /** What leaked. The other copy is the {@code Leak*} kinds of internal/bridge/leaks.go. */
  public enum Kind {
    /**
     * A reservation still holding bytes at its task's end (Java: its {@link
     * NativeReservation#size()}; Go: what the pool's close found). Accounting only: the bytes went
     * back to Spark with the task, so they are never resident.
     */
    RESERVATION("reservation"),
    /** A Go Arrow allocator closed with live buffers or imported batches still held. */
    ARROW("arrow"),
    /**
     * A Go Arrow allocator closed with batches exported to Java that Java still holds (or Go batches
     * Java still had open at its task's end, closed then): resident while Java holds them.
     */
    EXPORT("export"),
    /** Java Arrow buffers the task's producer allocator still held: resident until released. */
    JAVA_ARROW("java-arrow");

    private final String code;

    Kind(String code) {
      this.code = code;
    }

    /** The kind's code as the natives and the log name it. */
    public String code() {
      return code;
    }

    static Kind of(String code) {
      for (Kind k : values()) {
        if (k.code.equals(code)) {
          return k;
        }
      }
      throw new IllegalArgumentException("nativepool: unknown leak kind '" + code + "'");
    }
  }

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
      long taskAttemptId, String consumer, Kind kind, long bytes, String site, long resident) {
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
    NativeBridge.ensureLoaded();
    return parse(NativeBridge.recentLeaks0());
  }

  /** Parses recentLeaks0's lines ({@code task\tconsumer\tkind\tbytes\tresident\tsite}). */
  static List<Leak> parse(String flat) {
    List<Leak> out = new ArrayList<>();
    for (String[] f : NativeRecords.parse(flat, 6, "recentLeaks0")) {
      out.add(
          new Leak(
              Long.parseLong(f[0]),
              f[1],
              Kind.of(f[2]),
              Long.parseLong(f[3]),
              f[5],
              Long.parseLong(f[4])));
    }
    return out;
  }

  /**
   * Records a leak Java found (see {@link NativeBridge#reportLeak}); logs instead of throwing if the
   * library refuses it, so that a task's end never fails for a report.
   */
  static void report(
      long taskAttemptId, String consumer, Kind kind, long bytes, long resident, String site) {
    try {
      NativeBridge.ensureLoaded();
      NativeBridge.reportLeak0(taskAttemptId, consumer, kind.code(), bytes, resident, site);
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
