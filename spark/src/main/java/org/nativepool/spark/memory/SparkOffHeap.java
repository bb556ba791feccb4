package org.nativepool.spark.memory;

import java.util.UUID;
import org.apache.spark.SparkEnv;
import org.apache.spark.memory.MemoryManager;
import org.apache.spark.memory.MemoryMode;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.TempLocalBlockId;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.jni.OffHeap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pod guard's hold on Spark's off-heap memory as a whole ({@link OffHeap}), over the executor's
 * {@code MemoryManager}: what every consumer of the executor borrows from, whichever engine it
 * belongs to.
 *
 * <p>The ballast is off-heap <em>storage</em> memory acquired for a block id that no store holds
 * ({@code MemoryManager.acquireStorageMemory}, which any thread may call). Spark's execution takes
 * storage memory back only by evicting blocks of its memory store, and this block is not in it, so
 * no acquire can take the ballast back; Spark's consumers meet less room at their next acquire
 * and spill, each on its own task thread (nothing here calls their {@code spill()}). Only what is
 * free is taken: the amount asked is capped, under the memory manager's lock, by the memory free of
 * both pools, so that taking never evicts a cached block, and by the floor, so that Spark's
 * consumers always keep {@link #floor()} bytes between them beyond what nativepool's own pools
 * hold. The floor is Spark's own line by default: what execution keeps beside a storage region
 * full of cached blocks, which no execution acquire may evict ({@code spark.memory.storageFraction}
 * of the off-heap memory, half by default), so that the hold leaves Spark's consumers no less than
 * Spark itself may. Held lower, they fail or thrash: a Tungsten consumer that cannot get a page
 * after spilling fails its task ({@code AGGREGATE_OUT_OF_MEMORY}), and one held to a sliver spills
 * again and again, into files Spark then merges all at once, with a 1 MiB array on the heap and a
 * 1 MiB read buffer off it for each. Handing back
 * releases the storage memory and wakes the tasks waiting in Spark's 1/2N wait ({@code
 * notifyAll} on the memory manager, as Spark's own task end does). While it holds, the executor's
 * off-heap storage memory (the UI's "Storage Memory") shows the ballast.
 *
 * <p>{@link #keep} takes the same way, with no floor, what nativepool's pools held as ballast and
 * just handed back: the guard moves it into this hold to lend it to a task whose borrow Spark
 * granted short (a merge that cannot spill, in a task whose share Spark gave out), which the pools'
 * ballast, counted against the tasks that hold it, could not serve. Spark's consumers had none of
 * those bytes before and have none after.
 *
 * <p>Nothing is taken while a running task holds memory through an engine that fails its task
 * when Spark grants it short ({@link SparkConsumers#holderFailingOnShortGrant}: Comet, whose sort
 * fails when its merge of spill files is refused). For such a task the hold would not make a
 * consumer spill but fail the task, and the guard never fails one; the executor's other defences
 * (nativepool's own consumers giving way, the ledger, the diagnosis) stay. What is held already
 * when such a consumer starts stays until the episode ends, which is why an executor configured
 * for Comet makes no hold at all ({@code GuardSettings.besideComet}); this check covers Comet run
 * without its plugin or its extensions named.
 *
 * <p>Safe for concurrent use: every method runs under the memory manager's lock, and none blocks
 * on anything else. It works on every Spark line the plugin ships (3.5 to 4.3): the calls it uses
 * have the same signatures in each.
 */
public final class SparkOffHeap implements OffHeap {
  private static final Logger LOG = LoggerFactory.getLogger(SparkOffHeap.class);

  /** Spark's setting for the storage memory immune to eviction, a fraction of the memory. */
  static final String STORAGE_FRACTION = "spark.memory.storageFraction";

  /** Spark's default for {@link #STORAGE_FRACTION}. */
  static final double DEFAULT_STORAGE_FRACTION = 0.5;

  private final MemoryManager mm;
  private final long floor;
  private final BlockId block = new TempLocalBlockId(UUID.randomUUID());
  private final SparkConsumers consumers;

  /** Whether the last take found a consumer failing on a short grant. Guarded by {@link #mm}. */
  private boolean yielding;

  /** Bytes of storage memory held as ballast. Guarded by {@link #mm}'s monitor. */
  private long held;

  /**
   * A hold on {@code env}'s off-heap memory that leaves its consumers at least {@code floor} bytes.
   * It makes sure {@code env}'s memory store exists first: since Spark 4.0 the block manager makes
   * it on first use, and until then an execution acquire that must take memory back from storage
   * (the hold grows storage past its region) fails its task instead of finding nothing to evict.
   *
   * @throws IllegalArgumentException for a negative floor
   */
  public SparkOffHeap(SparkEnv env, long floor) {
    this(env, floor, null);
  }

  /**
   * As {@link #SparkOffHeap(SparkEnv, long)}, taking nothing while one of {@code consumers}'s tasks
   * holds memory through an engine that fails its task on a short grant; null: no such check.
   */
  public SparkOffHeap(SparkEnv env, long floor, SparkConsumers consumers) {
    if (floor < 0) {
      throw new IllegalArgumentException("nativepool: off-heap floor " + floor + ": negative");
    }
    env.blockManager().memoryStore(); // made on first use since Spark 4.0
    this.mm = env.memoryManager();
    this.floor = floor;
    this.consumers = consumers;
  }

  /**
   * The executor's hold ({@code SparkEnv}'s memory manager), or null when the executor has no
   * off-heap memory ({@code spark.memory.offHeap.size} 0). {@code floor} null: {@link
   * #defaultFloor}.
   */
  public static SparkOffHeap forExecutor(Long floor, int taskSlots) {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      return null;
    }
    MemoryManager mm = env.memoryManager();
    long total = total(mm);
    if (total <= 0) {
      return null;
    }
    long f =
        floor != null
            ? floor
            : defaultFloor(
                total,
                env.conf().getDouble(STORAGE_FRACTION, DEFAULT_STORAGE_FRACTION),
                mm.pageSizeBytes(),
                taskSlots);
    return new SparkOffHeap(env, Math.min(f, total), ExecutorState.sparkConsumers());
  }

  /**
   * The floor by default: what execution keeps beside a full storage region ({@code total} less
   * {@code storageFraction} of it, as Spark sizes the region), and at least two pages for each task
   * slot, never more than all of it.
   */
  public static long defaultFloor(long total, double storageFraction, long pageSize, int taskSlots) {
    long region = (long) (total * Math.min(1, Math.max(0, storageFraction)));
    long twoPages = 2 * pageSize * Math.max(1, taskSlots);
    return Math.min(total, Math.max(total - region, twoPages));
  }

  /** Spark's off-heap memory in all: execution and storage, used and free. */
  private static long total(MemoryManager mm) {
    synchronized (mm) {
      return mm.maxOffHeapStorageMemory() + mm.offHeapExecutionMemoryUsed();
    }
  }

  /** What Spark's consumers keep in any case. */
  public long floor() {
    return floor;
  }

  /** Bytes held as ballast now. */
  public long held() {
    synchronized (mm) {
      return held;
    }
  }

  @Override
  public long take(long n, long nativeHeld) {
    if (n <= 0 || nativeHeld < 0) {
      throw new IllegalArgumentException(
          "nativepool: OffHeap.take(" + n + ", " + nativeHeld + "): not positive, or negative");
    }
    synchronized (mm) {
      String failing = consumers == null ? null : consumers.holderFailingOnShortGrant();
      if (failing != null) {
        if (!yielding) {
          LOG.info(
              "nativepool: the pod guard holds none of Spark's off-heap memory while {}: that engine"
                  + " fails its task when Spark grants it less than it asked",
              failing);
        }
        yielding = true;
        return 0;
      }
      yielding = false;
      long storage = mm.offHeapStorageMemoryUsed();
      long total = mm.maxOffHeapStorageMemory() + mm.offHeapExecutionMemoryUsed();
      // Spark's consumers may use at most total − storage, nativepool's pools nativeHeld of it;
      // keep the rest at the floor or above.
      return holdLocked(Math.min(n, total - storage - nativeHeld - floor), "took");
    }
  }

  @Override
  public long keep(long n) {
    if (n <= 0) {
      throw new IllegalArgumentException("nativepool: OffHeap.keep(" + n + "): not positive");
    }
    synchronized (mm) {
      return holdLocked(n, "kept of the pools' ballast");
    }
  }

  /**
   * Holds up to {@code n} bytes of what is free as ballast and returns how many: never more than
   * is free of both pools (storage may borrow what execution does not use, so nothing is evicted).
   * Called with the memory manager's lock held.
   */
  private long holdLocked(long n, String how) {
    long grant = Math.min(n, freeLocked());
    if (grant <= 0 || !mm.acquireStorageMemory(block, grant, MemoryMode.OFF_HEAP)) {
      // (A refused acquire: unmanaged memory, Spark 4.1's, left less than it seemed.)
      return 0;
    }
    held += grant;
    if (LOG.isTraceEnabled()) {
      LOG.trace("nativepool: pod guard {} {} of off-heap memory, holds {}", how, grant, held);
    }
    return grant;
  }

  /** Off-heap memory free now, held by nobody. Called with the memory manager's lock held. */
  private long freeLocked() {
    return mm.maxOffHeapStorageMemory() - mm.offHeapStorageMemoryUsed();
  }

  @Override
  public void giveBack(long n) {
    synchronized (mm) {
      if (n <= 0 || n > held) {
        throw new IllegalStateException(
            "nativepool: OffHeap.giveBack("
                + n
                + "): the pod guard holds "
                + Bytes.format(held)
                + " of off-heap memory");
      }
      mm.releaseStorageMemory(n, MemoryMode.OFF_HEAP);
      held -= n;
      mm.notifyAll(); // the tasks in Spark's 1/2N wait
    }
  }

  @Override
  public long free() {
    synchronized (mm) {
      return freeLocked();
    }
  }

  @Override
  public String toString() {
    return "SparkOffHeap(floor " + Bytes.format(floor) + ", held " + Bytes.format(held()) + ")";
  }
}
