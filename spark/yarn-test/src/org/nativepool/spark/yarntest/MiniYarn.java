package org.nativepool.spark.yarntest;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * A real YARN for make test-yarn: Hadoop's MiniYARNCluster, a ResourceManager and one NodeManager in
 * this JVM, which launch containers as a cluster's do (DefaultContainerExecutor: a shell script
 * per container, started with setsid), with the NodeManager's physical-memory check on, as on
 * clusters without cgroups: its container monitor sums the resident pages of each container's
 * process tree every second and kills a container over its size (exit status -104, the process
 * SIGTERM'd: 143). The virtual-memory check is off (as most clusters set it), cgroups are not used,
 * and containers may be as small as 64 MiB.
 *
 * <p>Usage: {@code MiniYarn <conf dir> <node memory MiB>}. Writes the cluster's configuration
 * (its ResourceManager's addresses) to {@code <conf dir>/yarn-site.xml} and {@code core-site.xml},
 * which Spark's YARN client reads through {@code HADOOP_CONF_DIR}, prints {@code READY
 * <ResourceManager address>}, and runs until {@code <conf dir>/stop} appears. The cluster's files (the NodeManager's local and log directories: each container's
 * stdout and stderr) are under {@code target/nativepool-yarn} of the working directory, and kept
 * for ten minutes after an application.
 */
public final class MiniYarn {
  private MiniYarn() {}

  /** Starts the cluster; see the class comment. */
  public static void main(String[] args) throws Exception {
    File confDir = new File(args[0]);
    int nodeMb = Integer.parseInt(args[1]);
    YarnConfiguration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_HOSTNAME, "127.0.0.1");
    conf.set(YarnConfiguration.NM_ADDRESS, "127.0.0.1:0");
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, false);
    // one queue, first come first served: the capacity scheduler wants a queue configuration
    conf.set(
        YarnConfiguration.RM_SCHEDULER,
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
    // the NodeManager's memory check, as on a cluster without cgroups (a MiniYARNCluster turns its
    // container monitor off unless told to leave it alone)
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_CONTROL_RESOURCE_MONITORING, true);
    conf.setBoolean(YarnConfiguration.NM_CONTAINER_MONITOR_ENABLED, true);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, true);
    // no cgroups: memory is enforced by the monitor's check, not by a cgroup's limit (with this
    // true, Hadoop's default, the monitor leaves the killing to cgroups)
    conf.setBoolean(YarnConfiguration.NM_MEMORY_RESOURCE_ENFORCED, false);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    // ProcfsBasedProcessTree's RSS of /proc/<pid>/stat, not the smaps-based one
    conf.setBoolean(YarnConfiguration.PROCFS_USE_SMAPS_BASED_RSS_ENABLED, false);
    conf.setLong(YarnConfiguration.NM_CONTAINER_MON_INTERVAL_MS, 1000);
    conf.setInt(YarnConfiguration.NM_PMEM_MB, nodeMb);
    conf.setInt(YarnConfiguration.NM_VCORES, 8);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 64);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, nodeMb);
    // a full disk elsewhere on a shared machine must not take the node out
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 99.9f);
    conf.setLong(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 600);

    MiniYARNCluster cluster = new MiniYARNCluster("nativepool-yarn", 1, 1, 1);
    cluster.init(conf);
    cluster.start();
    if (!cluster.waitForNodeManagersToConnect(120_000)) {
      throw new IllegalStateException("the NodeManager did not register within 120 s");
    }
    Configuration running = cluster.getConfig();
    Files.createDirectories(confDir.toPath());
    write(running, new File(confDir, "yarn-site.xml"));
    write(new Configuration(false), new File(confDir, "core-site.xml"));
    System.out.println("READY " + running.get(YarnConfiguration.RM_ADDRESS));
    System.out.flush();

    Path stop = confDir.toPath().resolve("stop");
    while (!Files.exists(stop)) {
      Thread.sleep(500);
    }
    System.out.println("STOPPING");
    cluster.stop();
  }

  private static void write(Configuration c, File f) throws IOException {
    try (OutputStream out = new FileOutputStream(f)) {
      c.writeXml(out);
    }
  }
}
