package org.nativepool.spark.events;

import java.io.Serializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What an executor's memory ledger adds to a sample: its latest reading, part by part, and the
 * high-water marks of the interval since the previous sample. Immutable; Java-serialisable with JDK
 * types only (it travels over Spark's plugin RPC inside an {@link ExecutorSample}).
 *
 * @param parts each part's bytes in the latest reading (with {@code rss} and {@code unexplained}),
 *     in the ledger's order
 * @param partPeaks each part's highest reading in the interval
 * @param taskPoolPeak the highest peak of a task pool that closed in the interval; 0 if none
 * @param consumerPeaks the largest consumers' peaks in task pools that closed in the interval, by
 *     name (at most a few: the ledger keeps the largest)
 */
public record LedgerSample(
    Map<String, Long> parts,
    Map<String, Long> partPeaks,
    long taskPoolPeak,
    Map<String, Long> consumerPeaks)
    implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The sample of an executor that has no ledger reading yet. */
  public static final LedgerSample EMPTY = new LedgerSample(Map.of(), Map.of(), 0, Map.of());

  /** Copies the maps (keeping their order) and makes them unmodifiable. */
  public LedgerSample {
    parts = Collections.unmodifiableMap(new LinkedHashMap<>(parts));
    partPeaks = Collections.unmodifiableMap(new LinkedHashMap<>(partPeaks));
    consumerPeaks = Collections.unmodifiableMap(new LinkedHashMap<>(consumerPeaks));
  }

  /** The interval peak of {@code part}; 0 if the interval had no reading of it. */
  public long partPeak(String part) {
    return partPeaks.getOrDefault(part, 0L);
  }
}
