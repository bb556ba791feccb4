package org.nativepool.spark.jni;

import java.util.ArrayList;
import java.util.List;

/**
 * One episode of the pod guard, as {@code guardEpisodes0} returns it: a stretch of time in which
 * the headroom under the executor's memory limit was below the guard's reserve, from the sample
 * that saw it to the one that saw the reserve free again.
 *
 * @param id numbers the episodes from 1 in the guard's life
 * @param startMillis when a sample first saw the headroom under the reserve (Unix ms)
 * @param endMillis when one saw it back; 0 while the episode lasts
 * @param limit the limit the guard kept, in bytes
 * @param reserve the headroom it keeps free, in bytes
 * @param startUnreclaimable what the kernel could not reclaim at the start
 * @param peakUnreclaimable its highest during the episode
 * @param startNonNative what was resident outside native memory at the last calm sample before
 * @param peakNonNative its highest during the episode: the growth the guard answered
 * @param spilled bytes native consumers spilled into ballast
 * @param reactionMicros from the start to the first native spill that freed memory; -1 if none
 * @param recoveryMicros from the start to the end, or to the reading while it lasts
 * @param goFreed idle Go heap returned to the OS
 * @param trims calls to glibc's {@code malloc_trim}
 * @param nothingLeft whether a reaction found nothing native left to give, and no free off-heap
 *     memory to hold, while still short
 * @param offHeapTaken bytes of Spark's free off-heap memory the guard took as ballast (what any
 *     consumer freed, as it became free)
 * @param offHeapPeak the most of it the guard held at once
 * @param offHeapReactionMicros from the start to the first byte of it taken; -1 if none
 * @param spills who spilled what, largest first
 */
public record GuardEpisode(
    long id,
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
    long offHeapTaken,
    long offHeapPeak,
    long offHeapReactionMicros,
    List<Spill> spills) {

  /** Bytes one native consumer spilled into ballast during an episode. */
  public record Spill(String consumer, long bytes) {}

  /** The number of fields of a record line. */
  static final int FIELDS = 19;

  public GuardEpisode {
    spills = List.copyOf(spills);
  }

  /** Whether the episode still lasts. */
  public boolean open() {
    return endMillis == 0;
  }

  /** What grew outside native memory: the peak over the calm figure before the episode. */
  public long grewOutsideNative() {
    return Math.max(0, peakNonNative - startNonNative);
  }

  /**
   * The episodes of {@code guardEpisodes0}'s text.
   *
   * @throws IllegalStateException for a malformed line
   */
  static List<GuardEpisode> parse(String text) {
    List<GuardEpisode> out = new ArrayList<>();
    for (String[] f : Records.parse(text, FIELDS, "guardEpisodes0")) {
      long[] n = new long[FIELDS - 1];
      try {
        for (int i = 0; i < n.length; i++) {
          n[i] = Long.parseLong(f[i]);
        }
      } catch (NumberFormatException e) {
        throw new IllegalStateException(
            "nativepool: guardEpisodes0: malformed line '" + String.join("\t", f) + "'", e);
      }
      List<Spill> spills = new ArrayList<>();
      if (!f[FIELDS - 1].isEmpty()) {
        for (String s : f[FIELDS - 1].split("\u001f")) {
          int eq = s.indexOf('=');
          if (eq <= 0) {
            throw new IllegalStateException(
                "nativepool: guardEpisodes0: malformed spill '" + s + "'");
          }
          spills.add(new Spill(s.substring(eq + 1), Long.parseLong(s.substring(0, eq))));
        }
      }
      out.add(
          new GuardEpisode(
              n[0],
              n[1],
              n[2],
              n[3],
              n[4],
              n[5],
              n[6],
              n[7],
              n[8],
              n[9],
              n[10],
              n[11],
              n[12],
              n[13],
              n[14] != 0,
              n[15],
              n[16],
              n[17],
              spills));
    }
    return out;
  }
}
