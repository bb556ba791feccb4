package org.nativepool.spark.ledger;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.nativepool.spark.config.Bytes;

/**
 * One reading of the executor memory ledger ({@link LedgerReader#read()}): the process's resident
 * set split into parts, each read from the component that owns the memory. Immutable,
 * Java-serialisable (only JDK types), safe to share.
 *
 * <p>Each part is a {@link Kind}:
 *
 * <ul>
 *   <li>{@link Kind#RESIDENT} parts are memory the process holds. They do not overlap, and {@link
 *       #unexplained()} is {@link #rss()} less their sum: what no owner accounts for (the JVM's
 *       own native memory when Native Memory Tracking is off, C libraries, thread stacks of
 *       threads nobody counts, page rounding). It can be negative: committed is not resident
 *       (the heap's untouched pages), and {@link LedgerReader#JVM_MAPPED} counts whole mappings.
 *   <li>{@link Kind#DETAIL} parts say more about memory a resident part already holds (the heap's
 *       used bytes, the used share of netty's chunks, a netty pool's heap arenas). Not summed.
 *   <li>{@link Kind#ACCOUNTING} parts are bookkeeping, not memory: what the native pools reserved
 *       and hold from Spark, and leaked bytes still on the books. Not summed.
 * </ul>
 *
 * <p>A part whose owner could not be read (Native Memory Tracking off, a figure the platform does
 * not report) is absent; {@link #get} returns -1 for it.
 */
public final class LedgerSnapshot implements Serializable {
  private static final long serialVersionUID = 1L;

  /** How a part relates to the resident set; see the class comment. */
  public enum Kind {
    /** Memory the process holds; summed, and RSS less the sum is the unexplained remainder. */
    RESIDENT,
    /** More detail on memory a resident part already counts; not summed. */
    DETAIL,
    /** Bookkeeping (reservations, leaks on the books), not memory; not summed. */
    ACCOUNTING
  }

  private final long timeMillis;
  private final long rss;
  private final LinkedHashMap<String, Long> values;
  private final LinkedHashMap<String, Kind> kinds;

  /**
   * @param timeMillis when it was read (epoch ms)
   * @param rss the process's resident set, bytes (-1 unknown)
   * @param values part → bytes, in display order; copied
   * @param kinds part → kind, for every part of {@code values}; copied
   * @throws IllegalArgumentException if a part has no kind, or a part is named like the totals
   */
  LedgerSnapshot(long timeMillis, long rss, Map<String, Long> values, Map<String, Kind> kinds) {
    for (String p : values.keySet()) {
      if (!kinds.containsKey(p)) {
        throw new IllegalArgumentException("nativepool: ledger part " + p + " has no kind");
      }
      if (p.equals(LedgerReader.RSS) || p.equals(LedgerReader.UNEXPLAINED)) {
        throw new IllegalArgumentException("nativepool: ledger part named like a total: " + p);
      }
    }
    this.timeMillis = timeMillis;
    this.rss = rss;
    this.values = new LinkedHashMap<>(values);
    this.kinds = new LinkedHashMap<>(kinds);
    this.kinds.keySet().retainAll(values.keySet());
  }

  /** When the parts were read, epoch ms. */
  public long timeMillis() {
    return timeMillis;
  }

  /** The process's resident set in bytes ({@code VmRSS}), or -1 if it could not be read. */
  public long rss() {
    return rss;
  }

  /** The sum of the {@link Kind#RESIDENT} parts. */
  public long explained() {
    long sum = 0;
    for (Map.Entry<String, Long> e : values.entrySet()) {
      if (kinds.get(e.getKey()) == Kind.RESIDENT) {
        sum += Math.max(0, e.getValue());
      }
    }
    return sum;
  }

  /**
   * {@link #rss()} less {@link #explained()}: the resident bytes no owner accounts for; may be
   * negative (see the class comment). {@link Long#MIN_VALUE} if RSS is unknown.
   */
  public long unexplained() {
    return rss < 0 ? Long.MIN_VALUE : rss - explained();
  }

  /**
   * The bytes of {@code part}: any part name, or {@link LedgerReader#RSS} or {@link
   * LedgerReader#UNEXPLAINED}; -1 if this reading has no such part (or RSS is unknown).
   */
  public long get(String part) {
    if (LedgerReader.RSS.equals(part)) {
      return rss;
    }
    if (LedgerReader.UNEXPLAINED.equals(part)) {
      return rss < 0 ? -1 : unexplained();
    }
    Long v = values.get(part);
    return v == null ? -1 : v;
  }

  /** Whether this reading has {@code part} (the totals always count as present). */
  public boolean has(String part) {
    return values.containsKey(part)
        || LedgerReader.RSS.equals(part)
        || LedgerReader.UNEXPLAINED.equals(part);
  }

  /** The kind of {@code part}, or null if this reading has no such part (or it is a total). */
  public Kind kind(String part) {
    return kinds.get(part);
  }

  /** Part → bytes in display order, without the totals; unmodifiable. */
  public Map<String, Long> parts() {
    return Collections.unmodifiableMap(values);
  }

  /**
   * Every figure by name: {@link LedgerReader#RSS}, every part, then {@link
   * LedgerReader#UNEXPLAINED} (absent when RSS is unknown). A new map.
   */
  public Map<String, Long> figures() {
    Map<String, Long> out = new LinkedHashMap<>();
    out.put(LedgerReader.RSS, rss);
    out.putAll(values);
    if (rss >= 0) {
      out.put(LedgerReader.UNEXPLAINED, unexplained());
    }
    return out;
  }

  /** The names of the parts of {@code kind}, in display order. */
  public List<String> partsOf(Kind kind) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, Kind> e : kinds.entrySet()) {
      if (e.getValue() == kind) {
        out.add(e.getKey());
      }
    }
    return out;
  }

  /**
   * One line: RSS, then every resident part with its bytes, then the unexplained remainder and
   * the accounting parts, e.g. {@code RSS 1.2 GiB = jvm.heap.committed 512.0 MiB + … +
   * unexplained 20.0 MiB (native.reserved 64.0 MiB, …)}. Zero parts are left out.
   */
  public String line() {
    StringBuilder b = new StringBuilder("RSS ").append(Bytes.format(rss)).append(" =");
    String sep = " ";
    for (String p : partsOf(Kind.RESIDENT)) {
      long v = values.get(p);
      if (v != 0) {
        b.append(sep).append(p).append(' ').append(Bytes.format(v));
        sep = " + ";
      }
    }
    long u = unexplained();
    String unexplained =
        u == Long.MIN_VALUE
            ? "?"
            : u < 0 ? "-" + Bytes.format(-u) : Bytes.format(u);
    b.append(sep).append("unexplained ").append(unexplained);
    sep = " (";
    for (String p : partsOf(Kind.ACCOUNTING)) {
      long v = values.get(p);
      if (v > 0) {
        b.append(sep).append(p).append(' ').append(Bytes.format(v));
        sep = ", ";
      }
    }
    if (!sep.equals(" (")) {
      b.append(')');
    }
    String hint = nmtHint();
    if (hint != null) {
      b.append("; ").append(hint);
    }
    return b.toString();
  }

  /**
   * What Native Memory Tracking would do for an executor whose ledger leaves the JVM's own native
   * memory unexplained, and what it costs: said by the ledger's line, the Native Memory page and
   * the driver's startup line when NMT is off.
   */
  public static final String NMT_HINT =
      "-XX:NativeMemoryTracking=summary (in spark.executor.extraJavaOptions) would split it into"
          + " the JVM's threads, GC, own native memory and Unsafe allocations, at about 5 MiB more"
          + " RSS per executor and 9-12 ms instead of 3-5 ms per ledger reading (one a second)";

  /**
   * When the unexplained remainder is large (over {@value LedgerReader#NMT_HINT_PERCENT}% of RSS)
   * and Native Memory Tracking is off (the reading has no {@value LedgerReader#JVM_THREADS}), what
   * turning it on would split and cost ({@link #NMT_HINT}); null otherwise.
   */
  public String nmtHint() {
    return nmtHint(rss, unexplained(), values.containsKey(LedgerReader.JVM_THREADS));
  }

  /**
   * The hint for a reading of {@code rss} bytes with {@code unexplained} of them unexplained,
   * {@code nmt} whether Native Memory Tracking was on; null when none is due.
   */
  public static String nmtHint(long rss, long unexplained, boolean nmt) {
    if (nmt
        || rss <= 0
        || unexplained == Long.MIN_VALUE
        || unexplained * 100 <= rss * LedgerReader.NMT_HINT_PERCENT) {
      return null;
    }
    return "unexplained is "
        + unexplained * 100 / rss
        + "% of RSS with Native Memory Tracking off: "
        + NMT_HINT;
  }

  @Override
  public String toString() {
    return "LedgerSnapshot(" + line() + ")";
  }
}
