package org.nativepool.spark.ledger;

import org.nativepool.spark.arrow.TaskArrowAllocators;



import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.config.NativePoolConf;
import org.nativepool.spark.events.GrowthReportEvent;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.jni.ProcessStat;
import org.nativepool.spark.jni.Records;

/**
 * Who holds native memory right now: the live Go Arrow memory of this executor by consumer and
 * allocation site, largest first, over every open Go Arrow allocator and the ones that outlived
 * their task (exports Java still holds). For a growth detector sampling at each task's end, and
 * for operators.
 *
 * <p>With allocation sites off ({@link NativePoolConf#ALLOCATION_SITES}, the default) each
 * allocator counts from two counters, so a call costs one native call plus a pass over the open
 * allocators; the site is then "". With sites on, the live buffers are grouped by the function
 * that allocated them (a walk over every live buffer).
 *
 * <p>Java's own Arrow buffers are not listed: they are charged to the task's pool ({@code
 * arrow-java} reservation) while the task runs, and once leaked they show in {@link
 * ProcessStat#LEAKED_RESIDENT} and {@code TaskArrowAllocators.lingering()}.
 *
 * <p>Static and safe for concurrent use.
 */
public final class LiveNative {
  private LiveNative() {}

  /**
   * Live native memory of one consumer at one site.
   *
   * @param consumer the consumer's name
   * @param site the allocating function, or "" when sites are off
   * @param bytes bytes in its live buffers
   * @param buffers its live buffers
   */
  public record Owner(String consumer, String site, long bytes, long buffers) {
    /** Checks the fields. */
    public Owner {
      Objects.requireNonNull(consumer, "consumer");
      Objects.requireNonNull(site, "site");
    }
  }

  /**
   * The {@code n} largest owners of live native memory, largest first, loading the library if
   * needed.
   *
   * @throws IllegalArgumentException if {@code n < 0}
   */
  public static List<Owner> top(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("nativepool: LiveNative.top(" + n + "): negative count");
    }
    return parse(Natives.liveNative(n));
  }

  /**
   * The {@code n} largest owners as a growth report names them ({@link GrowthReportEvent#getOwners()}):
   * {@code consumer @ site: N bytes}, or {@code consumer: N bytes} without a site; empty if the
   * library cannot answer (the report then names no owner rather than failing).
   */
  public static List<String> describeTop(int n) {
    List<Owner> top;
    try {
      top = top(n);
    } catch (RuntimeException e) {
      return List.of();
    }
    List<String> out = new ArrayList<>(top.size());
    for (Owner o : top) {
      out.add(
          o.consumer()
              + (o.site().isEmpty() ? "" : " @ " + o.site())
              + ": "
              + Bytes.format(o.bytes())
              + " in "
              + o.buffers()
              + (o.buffers() == 1 ? " buffer" : " buffers"));
    }
    return out;
  }

  /** Parses liveNative0's lines ({@code consumer\tsite\tbytes\tbuffers}). */
  static List<Owner> parse(String flat) {
    List<Owner> out = new ArrayList<>();
    for (String[] f : Records.parse(flat, 4, "liveNative0")) {
      out.add(new Owner(f[0], f[1], Long.parseLong(f[2]), Long.parseLong(f[3])));
    }
    return out;
  }

}
