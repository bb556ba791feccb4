import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * What one heap holders analysis costs on a big heap: the plugin's recording (jdk.OldObjectSample
 * only, with stack traces, the path search bounded by a cutoff), a heap holding OBJECTS live
 * objects of SIZE bytes each in one array, allocation churn so that the JVM's sample queue is full,
 * then DUMPS dumps with the path search, each timed (wall time) while a spinning thread measures
 * the longest stall it saw (the pause the application feels), and read back as the plugin reads it.
 *
 *   java -Xms4g -Xmx4g bench/heap-holders/DumpBench.java [OBJECTS] [SIZE] [CUTOFF_MS] [DUMPS]
 *
 * defaults 1000000 objects of 3072 bytes (3 GiB live), cutoff 1000 ms, 3 dumps. One line per dump:
 * wall ms, longest stall ms, the path search's own ms (the events' duration), samples, samples with
 * a path, file KiB.
 */
public class DumpBench {
  static Object[] live;

  public static void main(String[] args) throws Exception {
    int objects = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
    int size = args.length > 1 ? Integer.parseInt(args[1]) : 3072;
    long cutoff = args.length > 2 ? Long.parseLong(args[2]) : 1000;
    int dumps = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    Recording r = new Recording();
    r.enable("jdk.OldObjectSample").withStackTrace().with("cutoff", cutoff + " ms");
    r.setToDisk(false);
    r.start();
    long t0 = System.nanoTime();
    live = new Object[objects];
    for (int i = 0; i < objects; i++) {
      live[i] = new byte[size - 16];
    }
    List<byte[]> churn = new ArrayList<>();
    for (int i = 0; i < 2_000_000; i++) { // garbage, so that samples come and go
      churn.add(new byte[256]);
      if (churn.size() > 10_000) {
        churn = new ArrayList<>();
      }
    }
    System.gc();
    Runtime rt = Runtime.getRuntime();
    System.out.printf(
        "heap: %d objects of %d bytes, %d MiB used of %d MiB max, filled in %d ms; cutoff %d ms%n",
        objects,
        size,
        (rt.totalMemory() - rt.freeMemory()) >> 20,
        rt.maxMemory() >> 20,
        (System.nanoTime() - t0) / 1_000_000,
        cutoff);
    for (int d = 0; d < dumps; d++) {
      Stall stall = new Stall();
      stall.start();
      Thread.sleep(200);
      Path f = Files.createTempFile("dumpbench", ".jfr");
      long w0 = System.nanoTime();
      r.dump(f);
      long wall = (System.nanoTime() - w0) / 1_000_000;
      Thread.sleep(200);
      stall.done = true;
      stall.join();
      long search = 0;
      int samples = 0;
      int withPath = 0;
      for (RecordedEvent e : RecordingFile.readAllEvents(f)) {
        if (e.getEventType().getName().equals("jdk.OldObjectSample")) {
          samples++;
          search = Math.max(search, e.getDuration().toMillis());
          if (e.getValue("root") != null) {
            withPath++;
          }
        }
      }
      System.out.printf(
          "dump %d: wall %d ms, longest stall %d ms, path search %d ms, %d samples, %d with a path,"
              + " %d KiB%n",
          d + 1, wall, stall.longest / 1_000_000, search, samples, withPath, Files.size(f) / 1024);
      Files.delete(f);
    }
    r.close();
    System.out.println(live.length);
  }

  /** Spins, noting the longest gap between two of its own clock readings. */
  static final class Stall extends Thread {
    volatile boolean done;
    long longest;

    Stall() {
      setDaemon(true);
    }

    @Override
    public void run() {
      long last = System.nanoTime();
      while (!done) {
        long now = System.nanoTime();
        longest = Math.max(longest, now - last);
        last = now;
      }
    }
  }
}
