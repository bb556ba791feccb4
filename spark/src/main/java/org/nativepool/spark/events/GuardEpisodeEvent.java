package org.nativepool.spark.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import java.io.Serializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.nativepool.spark.config.Bytes;

/**
 * One episode of an executor's pod guard: a stretch of time in which the headroom under the
 * executor's memory limit was below the guard's reserve, because memory outside native memory grew
 * (the JVM's direct buffers, Netty chunks, spill readers), and what the guard did about it. The
 * executor sends it to the driver when the episode ends; the driver posts it to Spark's listener
 * bus, so the event log keeps it, logs it at WARN and counts it in its {@code guard.*} gauges.
 *
 * <p>Besides the guard's own figures it carries what the executor memory ledger saw: each ledger
 * part that grew by at least {@value #MIN_GROWTH} bytes, from the last reading before the episode
 * to its highest reading during it ({@link #getGrownParts()}), which names where the memory that
 * took the headroom went.
 *
 * <p>Immutable; Java-serialisable for plugin RPC, Jackson-readable for the event log (one JSON
 * line, {@code {"Event":"org.nativepool.spark.events.GuardEpisodeEvent","executorId":"3",
 * "episodeId":1,…,"spills":{"sort (task 12)":67108864}}}).
 */
@JsonDeserialize(using = GuardEpisodeEvent.Json.class)
public final class GuardEpisodeEvent implements SparkListenerEvent, Serializable {
  /**
   * Jackson's reader of the event in an event log: every field read leniently, so that a malformed
   * event never stops the History Server's replay ({@link LenientEventDeserializer}).
   */
  public static final class Json extends LenientEventDeserializer<GuardEpisodeEvent> {
    private static final long serialVersionUID = 1L;

    /** The reader. */
    public Json() {
      super(GuardEpisodeEvent.class);
    }
  }

  private static final long serialVersionUID = 1L;

  /** The least growth of a ledger part that counts as grown: 1 MiB. */
  public static final long MIN_GROWTH = 1L << 20;

  /** The most grown parts {@link #describe()} names. */
  public static final int PARTS_NAMED = 6;

  private final String executorId;
  private final long episodeId;
  private final long startMillis;
  private final long endMillis;
  private final long limit;
  private final long reserve;
  private final long startUnreclaimable;
  private final long peakUnreclaimable;
  private final long startNonNative;
  private final long peakNonNative;
  private final long spilled;
  private final long reactionMicros;
  private final long recoveryMicros;
  private final long goFreed;
  private final long trims;
  private final boolean nothingLeft;
  private final long offHeapTaken;
  private final long offHeapPeak;
  private final long offHeapReactionMicros;
  private final Map<String, Long> grownParts;
  private final Map<String, Long> spills;

  /**
   * One episode; Jackson's creator when the event log is replayed. The maps are copied in their
   * order (largest first, as the executor makes them); null reads as empty.
   *
   * @param executorId the executor whose guard it was
   * @param episodeId the guard's number of the episode, from 1 in the guard's life
   * @param startMillis when a sample first saw the headroom under the reserve (epoch ms)
   * @param endMillis when one saw it back (epoch ms); 0 if it had not ended when sent
   * @param limit the limit the guard kept, bytes
   * @param reserve the headroom it keeps free, bytes
   * @param startUnreclaimable what the kernel could not reclaim at the start, bytes
   * @param peakUnreclaimable its highest during the episode, bytes
   * @param startNonNative what was resident outside native memory at the calm sample before
   * @param peakNonNative its highest during the episode
   * @param spilled bytes native consumers spilled into ballast
   * @param reactionMicros from the start to the first native spill that freed memory; -1 if none
   * @param recoveryMicros from the start to the end (or to the last reading, if not ended)
   * @param goFreed idle Go heap returned to the OS, bytes
   * @param trims calls to glibc's {@code malloc_trim}
   * @param nothingLeft whether a reaction found nothing native left to give, and no free off-heap
   *     memory to hold, while still short
   * @param offHeapTaken bytes of Spark's free off-heap memory the guard took as ballast; null (an
   *     event log written before the guard held it) reads as 0
   * @param offHeapPeak the most of it held at once; null reads as 0
   * @param offHeapReactionMicros from the start to the first byte of it taken; -1 if none; null
   *     reads as -1
   * @param grownParts ledger part → bytes it grew by, largest first
   * @param spills consumer → bytes it spilled, largest first
   */
  @JsonCreator
  public GuardEpisodeEvent(
      @JsonProperty("executorId") String executorId,
      @JsonProperty("episodeId") long episodeId,
      @JsonProperty("startMillis") long startMillis,
      @JsonProperty("endMillis") long endMillis,
      @JsonProperty("limit") long limit,
      @JsonProperty("reserve") long reserve,
      @JsonProperty("startUnreclaimable") long startUnreclaimable,
      @JsonProperty("peakUnreclaimable") long peakUnreclaimable,
      @JsonProperty("startNonNative") long startNonNative,
      @JsonProperty("peakNonNative") long peakNonNative,
      @JsonProperty("spilled") long spilled,
      @JsonProperty("reactionMicros") long reactionMicros,
      @JsonProperty("recoveryMicros") long recoveryMicros,
      @JsonProperty("goFreed") long goFreed,
      @JsonProperty("trims") long trims,
      @JsonProperty("nothingLeft") boolean nothingLeft,
      @JsonProperty("offHeapTaken") Long offHeapTaken,
      @JsonProperty("offHeapPeak") Long offHeapPeak,
      @JsonProperty("offHeapReactionMicros") Long offHeapReactionMicros,
      @JsonProperty("grownParts") Map<String, Long> grownParts,
      @JsonProperty("spills") Map<String, Long> spills) {
    this.executorId = executorId;
    this.episodeId = episodeId;
    this.startMillis = startMillis;
    this.endMillis = endMillis;
    this.limit = limit;
    this.reserve = reserve;
    this.startUnreclaimable = startUnreclaimable;
    this.peakUnreclaimable = peakUnreclaimable;
    this.startNonNative = startNonNative;
    this.peakNonNative = peakNonNative;
    this.spilled = spilled;
    this.reactionMicros = reactionMicros;
    this.recoveryMicros = recoveryMicros;
    this.goFreed = goFreed;
    this.trims = trims;
    this.nothingLeft = nothingLeft;
    this.offHeapTaken = offHeapTaken == null ? 0 : offHeapTaken;
    this.offHeapPeak = offHeapPeak == null ? 0 : offHeapPeak;
    this.offHeapReactionMicros = offHeapReactionMicros == null ? -1 : offHeapReactionMicros;
    this.grownParts = copy(grownParts);
    this.spills = copy(spills);
  }

  /**
   * An episode in which the guard held none of Spark's off-heap memory (a guard without it: {@code
   * spark.nativepool.guard.offHeap=false}, or no off-heap memory): the other constructor with
   * {@code offHeapTaken} and {@code offHeapPeak} 0 and {@code offHeapReactionMicros} -1.
   */
  public GuardEpisodeEvent(
      String executorId,
      long episodeId,
      long startMillis,
      long endMillis,
      long limit,
      long reserve,
      long startUnreclaimable,
      long peakUnreclaimable,
      long startNonNative,
      long peakNonNative,
      long spilled,
      long reactionMicros,
      long recoveryMicros,
      long goFreed,
      long trims,
      boolean nothingLeft,
      Map<String, Long> grownParts,
      Map<String, Long> spills) {
    this(
        executorId,
        episodeId,
        startMillis,
        endMillis,
        limit,
        reserve,
        startUnreclaimable,
        peakUnreclaimable,
        startNonNative,
        peakNonNative,
        spilled,
        reactionMicros,
        recoveryMicros,
        goFreed,
        trims,
        nothingLeft,
        0L,
        0L,
        -1L,
        grownParts,
        spills);
  }

  private static Map<String, Long> copy(Map<String, Long> m) {
    return Collections.unmodifiableMap(m == null ? new LinkedHashMap<>() : new LinkedHashMap<>(m));
  }

  /** The executor whose guard it was. */
  public String getExecutorId() {
    return executorId;
  }

  /** The guard's number of the episode, from 1 in the guard's life. */
  public long getEpisodeId() {
    return episodeId;
  }

  /** When a sample first saw the headroom under the reserve (epoch ms). */
  public long getStartMillis() {
    return startMillis;
  }

  /** When a sample saw the reserve free again (epoch ms); 0 if it had not ended when sent. */
  public long getEndMillis() {
    return endMillis;
  }

  /** The memory limit the guard kept, bytes. */
  public long getLimit() {
    return limit;
  }

  /** The headroom the guard keeps free under the limit, bytes. */
  public long getReserve() {
    return reserve;
  }

  /** What the kernel could not reclaim when the episode started, bytes. */
  public long getStartUnreclaimable() {
    return startUnreclaimable;
  }

  /** The highest unreclaimable figure during the episode, bytes. */
  public long getPeakUnreclaimable() {
    return peakUnreclaimable;
  }

  /** What was resident outside native memory at the guard's last calm sample before, bytes. */
  public long getStartNonNative() {
    return startNonNative;
  }

  /** The highest figure resident outside native memory during the episode, bytes. */
  public long getPeakNonNative() {
    return peakNonNative;
  }

  /** Bytes native consumers spilled into ballast (kept from Spark while the pressure lasted). */
  public long getSpilled() {
    return spilled;
  }

  /** From the start to the first native spill that freed memory, µs; -1 if none did. */
  public long getReactionMicros() {
    return reactionMicros;
  }

  /** From the start to the end, µs (to the last reading if it had not ended). */
  public long getRecoveryMicros() {
    return recoveryMicros;
  }

  /** Idle Go heap the guard returned to the OS, bytes. */
  public long getGoFreed() {
    return goFreed;
  }

  /** Calls the guard made to glibc's {@code malloc_trim}. */
  public long getTrims() {
    return trims;
  }

  /**
   * Whether a reaction found nothing native left to give while the headroom was still short: the
   * guard then left the decision to the kernel.
   */
  public boolean isNothingLeft() {
    return nothingLeft;
  }

  /**
   * Bytes of Spark's free off-heap memory the guard took as ballast during the episode (what any
   * consumer freed, held as it became free), so that every consumer of the executor gave way.
   */
  public long getOffHeapTaken() {
    return offHeapTaken;
  }

  /** The most of Spark's off-heap memory the guard held at once during the episode, bytes. */
  public long getOffHeapPeak() {
    return offHeapPeak;
  }

  /** From the start to the first byte of Spark's off-heap memory taken, µs; -1 if none was. */
  public long getOffHeapReactionMicros() {
    return offHeapReactionMicros;
  }

  /**
   * Ledger part → bytes it grew by, from the last ledger reading before the episode to the part's
   * highest reading during it: the resident parts and the unexplained remainder that grew by at
   * least {@value #MIN_GROWTH} bytes, largest first. Empty if nothing did, or the ledger had no
   * reading to compare.
   */
  public Map<String, Long> getGrownParts() {
    return grownParts;
  }

  /** Consumer (with its task) → bytes it spilled into ballast, largest first. */
  public Map<String, Long> getSpills() {
    return spills;
  }

  /** Whether the episode had not ended when the event was made. */
  @JsonIgnore
  public boolean isOpen() {
    return endMillis == 0;
  }

  /** What grew outside native memory: the peak over the calm figure before the episode, bytes. */
  @JsonIgnore
  public long getGrewOutsideNative() {
    return Math.max(0, peakNonNative - startNonNative);
  }

  /**
   * The executor's WARN line, e.g. {@code nativepool: executor 3: pod guard episode 7: the headroom
   * fell under the 32.0 MiB reserve of the 4.4 GiB limit; unreclaimable 4.3 GiB at the start, 4.4
   * GiB at the peak; grew outside native memory: 150.0 MiB (ledger: jvm.direct +120.0 MiB,
   * netty.shared.direct +32.0 MiB); spilled 512.0 MiB (sort (task 12) 400.0 MiB, agg (task 13)
   * 112.0 MiB); reaction 4.8 ms; recovered in 830.2 ms}. An episode where nothing native was left
   * to give ends with {@code nothing native was left to give: the kernel decided}; one not ended
   * yet says {@code still short after …} instead of {@code recovered in …}.
   */
  public String describe() {
    StringBuilder b =
        new StringBuilder("nativepool: executor ")
            .append(executorId)
            .append(": pod guard episode ")
            .append(episodeId)
            .append(": the headroom fell under the ")
            .append(Bytes.format(reserve))
            .append(" reserve of the ")
            .append(Bytes.mib(limit))
            .append(" limit; unreclaimable ")
            .append(Bytes.mib(startUnreclaimable))
            .append(" at the start, ")
            .append(Bytes.mib(peakUnreclaimable))
            .append(" at the peak; grew outside native memory: ")
            .append(Bytes.format(getGrewOutsideNative()));
    if (grownParts.isEmpty()) {
      b.append(" (no ledger part grew by 1 MiB or more)");
    } else {
      b.append(" (ledger: ");
      int n = 0;
      for (Map.Entry<String, Long> e : grownParts.entrySet()) {
        if (n == PARTS_NAMED) {
          b.append(", …");
          break;
        }
        b.append(n++ > 0 ? ", " : "")
            .append(e.getKey())
            .append(" +")
            .append(Bytes.format(e.getValue()));
      }
      b.append(')');
    }
    if (spilled > 0) {
      b.append("; spilled ").append(Bytes.format(spilled));
      if (!spills.isEmpty()) {
        b.append(" (");
        int n = 0;
        for (Map.Entry<String, Long> e : spills.entrySet()) {
          b.append(n++ > 0 ? ", " : "")
              .append(e.getKey())
              .append(' ')
              .append(Bytes.format(e.getValue()));
        }
        b.append(')');
      }
    } else {
      b.append("; nothing spilled");
    }
    b.append(reactionMicros >= 0 ? "; reaction " + millis(reactionMicros) : "; no reaction");
    if (offHeapTaken > 0) {
      b.append("; held Spark's free off-heap memory, ")
          .append(Bytes.format(offHeapPeak))
          .append(" at most (")
          .append(Bytes.format(offHeapTaken))
          .append(" taken, the first after ")
          .append(millis(offHeapReactionMicros))
          .append(')');
    }
    b.append(isOpen() ? "; still short after " : "; recovered in ").append(millis(recoveryMicros));
    if (goFreed > 0) {
      b.append("; Go heap returned ").append(Bytes.format(goFreed));
    }
    if (nothingLeft) {
      String more = offHeapTaken > 0 ? " and nothing more free to hold" : "";
      b.append(
          isOpen()
              ? "; nothing native is left to give" + more + ": the kernel decides"
              : "; nothing native was left to give" + more + ": the kernel decided");
    }
    return b.toString();
  }

  /**
   * The driver's one-line summary, e.g. {@code nativepool: executor 3 had pod guard episode 7:
   * spilled 512.0 MiB, reaction 4.8 ms, recovered in 830.2 ms; grew outside native memory 150.0
   * MiB, most in jvm.direct (+120.0 MiB)}.
   */
  public String summary() {
    StringBuilder b =
        new StringBuilder("nativepool: executor ")
            .append(executorId)
            .append(" had pod guard episode ")
            .append(episodeId)
            .append(": spilled ")
            .append(Bytes.format(spilled))
            .append(reactionMicros >= 0 ? ", reaction " + millis(reactionMicros) : ", no reaction")
            .append(
                offHeapTaken > 0
                    ? ", held " + Bytes.format(offHeapPeak) + " of Spark's off-heap memory"
                    : "")
            .append(isOpen() ? ", still short after " : ", recovered in ")
            .append(millis(recoveryMicros))
            .append("; grew outside native memory ")
            .append(Bytes.format(getGrewOutsideNative()));
    if (!grownParts.isEmpty()) {
      Map.Entry<String, Long> top = grownParts.entrySet().iterator().next();
      b.append(", most in ")
          .append(top.getKey())
          .append(" (+")
          .append(Bytes.format(top.getValue()))
          .append(')');
    }
    if (nothingLeft) {
      b.append("; nothing native was left to give");
    }
    return b.toString();
  }

  /** Microseconds as milliseconds with one decimal, e.g. {@code 4.8 ms}. */
  static String millis(long micros) {
    return String.format(Locale.ROOT, "%.1f ms", micros / 1000.0);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof GuardEpisodeEvent e
        && Objects.equals(executorId, e.executorId)
        && episodeId == e.episodeId
        && startMillis == e.startMillis
        && endMillis == e.endMillis
        && limit == e.limit
        && reserve == e.reserve
        && startUnreclaimable == e.startUnreclaimable
        && peakUnreclaimable == e.peakUnreclaimable
        && startNonNative == e.startNonNative
        && peakNonNative == e.peakNonNative
        && spilled == e.spilled
        && reactionMicros == e.reactionMicros
        && recoveryMicros == e.recoveryMicros
        && goFreed == e.goFreed
        && trims == e.trims
        && nothingLeft == e.nothingLeft
        && offHeapTaken == e.offHeapTaken
        && offHeapPeak == e.offHeapPeak
        && offHeapReactionMicros == e.offHeapReactionMicros
        && grownParts.equals(e.grownParts)
        && spills.equals(e.spills);
  }

  @Override
  public int hashCode() {
    return Objects.hash(executorId, episodeId, startMillis);
  }

  @Override
  public String toString() {
    return "GuardEpisodeEvent(" + describe() + ")";
  }
}
