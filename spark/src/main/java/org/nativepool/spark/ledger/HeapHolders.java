package org.nativepool.spark.ledger;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordingFile;
import org.nativepool.spark.events.HeapHolder;
import org.nativepool.spark.events.HeapHoldersEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who holds this JVM's heap, without a heap dump: one JDK Flight Recorder recording per JVM of the
 * {@code jdk.OldObjectSample} event only, started from the plugin through the {@code jdk.jfr} API
 * (no JVM flag), and its analysis ({@link #analyze}).
 *
 * <p><b>The recording.</b> The JVM keeps a bounded sample of live objects, weighted by the bytes
 * allocated between samples, each with its allocation time and stack (the JVM's queue holds 256
 * samples unless {@code -XX:FlightRecorderOptions:old-object-queue-size} says otherwise; a dead
 * object's sample is dropped at the next collection). The recording writes nothing while it runs
 * ({@code toDisk} false: the samples live in the JVM's queue, not in buffers). Both plugin sides of
 * a JVM share it ({@link #start} counts them); the last {@link #release()} stops it.
 *
 * <p><b>An analysis.</b> {@link Recording#dump} with the recording's {@code cutoff} makes the JVM
 * search each sample's path to a GC root, for at most that long, while it is paused; the dump, a
 * file of a few hundred KiB holding no object's contents, goes to this JVM's directory under
 * Spark's local directory and is read back in process ({@code jdk.jfr.consumer}) and deleted at
 * once ({@link HeapHolderAnalysis} names the holders). JFR's own repository, which the dump goes
 * through, is put in the same directory when no recording made one before; JFR removes it at exit,
 * and the plugin removes the directory when the last side releases the recording, or at exit.
 * Analyses run one at a time per JVM; {@link #tryAnalyze} refuses one while another runs, or sooner
 * than the rate limit allows after the last one it ran.
 *
 * <p>Safe for concurrent use.
 */
public final class HeapHolders {
  private static final Logger LOG = LoggerFactory.getLogger(HeapHolders.class);

  /** Holders a report names. */
  public static final int HOLDERS_PER_REPORT = 5;

  /** The recording's name, as {@code jcmd JFR.check} lists it. */
  public static final String RECORDING_NAME = "nativepool heap holders";

  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("HH:mm:ss", Locale.ROOT).withZone(ZoneOffset.UTC);

  // The process-wide recording. Guarded by HeapHolders.class.
  private static HeapHolders instance;
  private static int users;
  private static boolean warned;

  private final Recording recording;
  private final Path dir;
  private final long cutoffMillis;
  private final ReentrantLock analysing = new ReentrantLock();
  private final AtomicLong dumps = new AtomicLong();

  /** When the last on-demand analysis began (epoch ms); 0: none. Guarded by {@link #analysing}. */
  private long lastOnDemandMillis;

  private HeapHolders(Recording recording, Path dir, long cutoffMillis) {
    this.recording = recording;
    this.dir = dir;
    this.cutoffMillis = cutoffMillis;
  }

  /**
   * This JVM's recording, started on the first call (with {@code cutoffMillis} as its path search
   * bound and its files in a directory of its own under {@code localDir}); later calls share it
   * until as many {@link #release()}s. Returns null, logging why once, if JFR is not available or
   * will not start: the plugin runs on without heap holders.
   */
  public static synchronized HeapHolders start(long cutoffMillis, Path localDir) {
    if (instance != null) {
      users++;
      return instance;
    }
    Path dir = null;
    try {
      dir = Files.createTempDirectory(Files.createDirectories(localDir), "nativepool-heap-");
      Path created = dir;
      Runtime.getRuntime()
          .addShutdownHook(new Thread(() -> deleteTree(created), "nativepool-heap-cleanup"));
      placeRepository(dir);
      Recording r = new Recording();
      r.setName(RECORDING_NAME);
      r.enable(HeapHolderAnalysis.EVENT)
          .withStackTrace()
          .with("cutoff", cutoffMillis + " ms");
      r.setToDisk(false);
      r.start();
      instance = new HeapHolders(r, dir, cutoffMillis);
      users = 1;
      LOG.info(
          "nativepool: heap holders: JFR Old Object Samples recorded (path search bound {} ms,"
              + " files in {})",
          cutoffMillis,
          dir);
      return instance;
    } catch (IOException | RuntimeException | LinkageError e) {
      if (dir != null) {
        deleteTree(dir);
      }
      if (!warned) {
        warned = true;
        LOG.warn("nativepool: heap holders off: JDK Flight Recorder did not start: {}", e);
      }
      return null;
    }
  }

  /**
   * Puts JFR's repository (where a dump's chunks go on their way) in {@code dir}, unless this JVM's
   * JFR made one already (another recording, {@code -XX:StartFlightRecording}): that one is kept.
   */
  private static void placeRepository(Path dir) {
    if (System.getProperty("jdk.jfr.repository") != null) {
      return;
    }
    try {
      MBeanServer server = ManagementFactory.getPlatformMBeanServer();
      server.invoke(
          new ObjectName("com.sun.management:type=DiagnosticCommand"),
          "jfrConfigure",
          new Object[] {new String[] {"repositorypath=" + dir}},
          new String[] {String[].class.getName()});
    } catch (Exception | LinkageError e) {
      LOG.debug("nativepool: heap holders: JFR's repository stays where JFR puts it", e);
    }
  }

  /** One side is done with the recording; the last stops it and removes its directory. */
  public void release() {
    synchronized (HeapHolders.class) {
      if (instance != this || --users > 0) {
        return;
      }
      instance = null;
    }
    analysing.lock();
    try {
      // A recording that stops with the event on has the JVM search the samples' paths (JFR
      // emits them at the end): a pause for nothing at the plugin's shutdown.
      recording.disable(HeapHolderAnalysis.EVENT);
      recording.close();
    } catch (RuntimeException e) {
      LOG.debug("nativepool: heap holders: closing the recording", e);
    } finally {
      analysing.unlock();
    }
    deleteTree(dir);
  }

  /** The directory its dumps go to. */
  public Path directory() {
    return dir;
  }

  /** The path search's bound, ms. */
  public long cutoffMillis() {
    return cutoffMillis;
  }

  /** Analyses made so far. */
  public long analyses() {
    return dumps.get();
  }

  /**
   * Names the heap's {@value #HOLDERS_PER_REPORT} largest holders, samples allocated before {@code
   * sinceMillis} left out (0: none), waiting for an analysis under way to finish first. The JVM is
   * paused for the path search, at most {@link #cutoffMillis()}. Never throws: a failure is the
   * result's note.
   *
   * @param executorId the JVM, for the result
   * @param trigger why, for the result
   */
  public HeapHoldersEvent analyze(String executorId, String trigger, long sinceMillis) {
    analysing.lock();
    try {
      return run(executorId, trigger, sinceMillis);
    } finally {
      analysing.unlock();
    }
  }

  /**
   * {@link #analyze} on demand: refused (the note says why, no holders) while another analysis of
   * this JVM runs, or within {@code minIntervalMillis} of the last on-demand one.
   */
  public HeapHoldersEvent tryAnalyze(String executorId, String trigger, long minIntervalMillis) {
    long now = System.currentTimeMillis();
    if (!analysing.tryLock()) {
      return refused(executorId, trigger, now, "refused: another analysis of this JVM is running");
    }
    try {
      long next = lastOnDemandMillis + minIntervalMillis;
      if (lastOnDemandMillis > 0 && now < next) {
        return refused(
            executorId,
            trigger,
            now,
            "refused: one analysis per "
                + TimeUnit.MILLISECONDS.toSeconds(minIntervalMillis)
                + " s, the next in "
                + Math.max(1, (next - now + 999) / 1000)
                + " s");
      }
      lastOnDemandMillis = now;
      return run(executorId, trigger, 0);
    } finally {
      analysing.unlock();
    }
  }

  private static HeapHoldersEvent refused(
      String executorId, String trigger, long now, String why) {
    return new HeapHoldersEvent(executorId, now, trigger, 0, why, List.of());
  }

  /** One dump and its analysis; the caller holds {@link #analysing}. */
  private HeapHoldersEvent run(String executorId, String trigger, long sinceMillis) {
    long now = System.currentTimeMillis();
    Path file = dir.resolve("holders-" + dumps.incrementAndGet() + ".jfr");
    try {
      long t0 = System.nanoTime();
      recording.dump(file);
      long dumpMillis = (System.nanoTime() - t0) / 1_000_000;
      long size = Files.size(file);
      HeapHolderAnalysis.Outcome o =
          HeapHolderAnalysis.analyze(
              RecordingFile.readAllEvents(file), sinceMillis, HOLDERS_PER_REPORT, cutoffMillis);
      String since =
          sinceMillis > 0 ? TIME.format(Instant.ofEpochMilli(sinceMillis)) + " UTC" : null;
      String note =
          HeapHolderAnalysis.note(o, since, cutoffMillis)
              + "; dump "
              + dumpMillis
              + " ms, "
              + (size + 1023) / 1024
              + " KiB";
      List<HeapHolder> holders = o.holders();
      return new HeapHoldersEvent(
          executorId,
          now,
          trigger,
          sinceMillis,
          note,
          holders,
          o.recent(),
          o.live(),
          o.liveBytes());
    } catch (IOException | RuntimeException e) {
      LOG.warn("nativepool: heap holders: the analysis failed", e);
      return new HeapHoldersEvent(
          executorId, now, trigger, sinceMillis, "the analysis failed: " + e, List.of());
    } finally {
      try {
        Files.deleteIfExists(file);
      } catch (IOException e) {
        LOG.debug("nativepool: heap holders: cannot delete {}", file, e);
      }
    }
  }

  /** Deletes {@code dir} and everything under it; what cannot be deleted is left. */
  static void deleteTree(Path dir) {
    if (dir == null || !Files.exists(dir)) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(Comparator.reverseOrder())
          .forEach(
              p -> {
                try {
                  Files.deleteIfExists(p);
                } catch (IOException e) {
                  // JFR may still hold a chunk until it exits; its own hook removes it
                }
              });
    } catch (IOException | RuntimeException e) {
      // best effort
    }
  }

  @Override
  public String toString() {
    return "HeapHolders(" + RECORDING_NAME + ", cutoff " + cutoffMillis + " ms, " + dir + ")";
  }
}
