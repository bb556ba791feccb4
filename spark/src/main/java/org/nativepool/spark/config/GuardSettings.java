package org.nativepool.spark.config;

import org.apache.spark.SparkConf;

/**
 * The executor's view of the pod guard's keys of {@link NativePoolConf} ({@link
 * NativePoolConf#GUARD_ENABLED}, {@link NativePoolConf#GUARD_RESERVE}, {@link
 * NativePoolConf#GUARD_LIMIT}), resolved into the arguments of {@code Natives.configureGuard}:
 * whether the guard runs, its reserve, the limit it keeps where the memory cgroup sets none,
 * whether that limit also applies under a cgroup limit, and what it is held against.
 *
 * <p>The guard keeps the executor's memory cgroup's limit wherever there is one (the Go side finds
 * it); the limit resolved here is the fallback, held against the process's resident memory:
 *
 * <ul>
 *   <li>an explicit {@link NativePoolConf#GUARD_LIMIT}: on every master, and where a cgroup limit
 *       exists too the tighter of the two counts ({@link #limitExplicit()});
 *   <li>else, with {@code auto}, the container size Spark computes ({@link ContainerSize}) where
 *       Spark sizes executors' containers (YARN, Kubernetes: YARN's process-tree check kills over
 *       it without any cgroup limit), and 0 elsewhere (local mode, standalone): there only a cgroup
 *       limit counts, and without one the guard stands by;
 *   <li>else, with {@code true}, the container size everywhere.
 * </ul>
 *
 * <p>On YARN ({@link #processTree()}) that limit is held against what the NodeManager's
 * process-tree check measures: the resident memory of every process of the container (the JVM,
 * the Python workers it forks, the launch scripts), file-backed pages included; elsewhere against
 * the JVM's own anonymous and shared resident memory.
 *
 * <p>Immutable.
 */
public final class GuardSettings {

  private final GuardMode mode;
  private final boolean enabled;
  private final long reserve;
  private final long limit;
  private final boolean limitExplicit;
  private final boolean processTree;
  private final String limitOrigin;
  private final boolean offHeap;
  private final String besideComet;
  private final Long offHeapFloor;
  private final int taskSlots;

  private GuardSettings(
      GuardMode mode,
      boolean enabled,
      long reserve,
      long limit,
      boolean limitExplicit,
      boolean processTree,
      String origin,
      boolean offHeap,
      String besideComet,
      Long offHeapFloor,
      int taskSlots) {
    this.mode = mode;
    this.enabled = enabled;
    this.reserve = reserve;
    this.limit = limit;
    this.limitExplicit = limitExplicit;
    this.processTree = processTree;
    this.limitOrigin = origin;
    this.offHeap = offHeap && besideComet == null;
    this.besideComet = besideComet;
    this.offHeapFloor = offHeapFloor;
    this.taskSlots = taskSlots;
  }

  /**
   * Reads and resolves the settings of a Spark configuration (the executor's: {@code spark.master}
   * says where it runs).
   *
   * @throws IllegalArgumentException naming the key and the value, for a value that does not parse,
   *     a limit of 0, or a reserve not below the limit
   */
  public static GuardSettings fromConf(SparkConf conf) {
    GuardMode mode = NativePoolConf.GUARD_ENABLED.read(conf);
    long reserve = NativePoolConf.GUARD_RESERVE.read(conf);
    Long explicit = NativePoolConf.GUARD_LIMIT.read(conf);
    String master = conf.get("spark.master", "");
    long limit;
    String origin;
    if (explicit != null) {
      limit = explicit;
      origin = NativePoolConf.GUARD_LIMIT.key();
    } else if (mode == GuardMode.ON || (mode == GuardMode.AUTO && containerSized(master))) {
      limit = ContainerSize.bytes(conf);
      origin = "the container size: " + ContainerSize.describe(conf);
    } else {
      limit = 0;
      origin =
          mode == GuardMode.OFF
              ? "none"
              : "none: Spark sizes no container on master '"
                  + master
                  + "'; only a cgroup limit counts";
    }
    if (reserve > 0 && limit > 0 && reserve >= limit) {
      throw new IllegalArgumentException(
          "nativepool: "
              + NativePoolConf.GUARD_RESERVE.key()
              + " = '"
              + conf.get(NativePoolConf.GUARD_RESERVE.key())
              + "': not below the guard's limit "
              + Bytes.format(limit)
              + " ("
              + origin
              + ")");
    }
    return new GuardSettings(
        mode,
        mode != GuardMode.OFF,
        reserve,
        limit,
        explicit != null,
        master.startsWith("yarn"),
        origin,
        NativePoolConf.GUARD_OFF_HEAP.read(conf),
        CometDeployment.of(conf),
        NativePoolConf.GUARD_OFF_HEAP_FLOOR.read(conf),
        TaskSlots.of(conf));
  }

  /**
   * Whether Spark runs executors on {@code master} in containers it sizes: YARN ({@code yarn}) and
   * Kubernetes ({@code k8s://…}).
   */
  public static boolean containerSized(String master) {
    return master.startsWith("yarn") || master.startsWith("k8s://");
  }

  /** {@link NativePoolConf#GUARD_ENABLED} as set. */
  public GuardMode mode() {
    return mode;
  }

  /** Whether the guard runs: {@code configureGuard}'s {@code enabled}. */
  public boolean enabled() {
    return enabled;
  }

  /**
   * {@link NativePoolConf#GUARD_RESERVE} in bytes: {@code configureGuard}'s {@code reserve}; 0 =
   * the Go side's default, 2% of the limit and at least 32 MiB.
   */
  public long reserve() {
    return reserve;
  }

  /**
   * The limit the guard keeps where the memory cgroup sets none, in bytes: {@code configureGuard}'s
   * {@code limit}; 0 = none (only a cgroup limit counts).
   */
  public long limit() {
    return limit;
  }

  /**
   * Whether {@link #limit()} was set ({@link NativePoolConf#GUARD_LIMIT}): {@code configureGuard}'s
   * {@code limitExplicit}, so that under a cgroup limit too the tighter counts.
   */
  public boolean limitExplicit() {
    return limitExplicit;
  }

  /**
   * Whether the limit is held, where no cgroup sets one, against the resident memory of the
   * executor's process tree, as YARN's NodeManager measures a container (its {@code
   * ProcfsBasedProcessTree}: every process's resident pages, file-backed ones included):
   * {@code configureGuard}'s {@code processTree}; true on YARN.
   */
  public boolean processTree() {
    return processTree;
  }

  /**
   * {@link NativePoolConf#GUARD_OFF_HEAP}: whether the guard holds Spark's free off-heap memory
   * while the headroom is short (where the executor has off-heap memory); never beside Comet
   * ({@link #besideComet()}).
   */
  public boolean offHeap() {
    return offHeap;
  }

  /**
   * Where the configuration deploys Comet ({@link CometDeployment#of}); null where it does not.
   * Beside Comet the guard holds none of Spark's off-heap memory: its hold would fail Comet's
   * tasks, not make them spill.
   */
  public String besideComet() {
    return besideComet;
  }

  /** {@link NativePoolConf#GUARD_OFF_HEAP_FLOOR} in bytes; null (unset): the automatic floor. */
  public Long offHeapFloor() {
    return offHeapFloor;
  }

  /** The executor's task slots ({@link TaskSlots}), for the automatic off-heap floor. */
  public int taskSlots() {
    return taskSlots;
  }

  /** Where {@link #limit()} came from, in words. */
  public String limitOrigin() {
    return limitOrigin;
  }

  /**
   * One line for the executor's startup log, e.g. {@code pod guard auto: on, reserve default (2% of
   * the limit, at least 32 MiB), limit 4.4 GiB (the container size: executor memory 4.0 GiB +
   * memoryOverhead 409.0 MiB = 4.4 GiB; where no cgroup sets one)}.
   */
  @Override
  public String toString() {
    if (!enabled) {
      return "pod guard off (" + NativePoolConf.GUARD_ENABLED.key() + "=false)";
    }
    return "pod guard "
        + mode.word()
        + ": on, reserve "
        + (reserve > 0 ? Bytes.format(reserve) : "default (2% of the limit, at least 32 MiB)")
        + ", limit "
        + (limit > 0
            ? Bytes.format(limit)
                + " ("
                + limitOrigin
                + (limitExplicit
                    ? "; under a cgroup limit the tighter counts)"
                    : "; where no cgroup sets one)")
                + (processTree
                    ? " against the container's process tree, as YARN's NodeManager measures it"
                    : "")
            : limitOrigin)
        + (offHeap
            ? ", holding Spark's free off-heap memory while short"
            : besideComet != null
                ? ", native memory only (beside Comet, "
                    + besideComet
                    + ": Comet fails a task whose reservation Spark grants short, so none of"
                    + " Spark's off-heap memory is held)"
                : ", native memory only (" + NativePoolConf.GUARD_OFF_HEAP.key() + "=false)");
  }
}
