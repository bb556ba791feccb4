import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import jdk.jfr.Recording;

/**
 * What the plugin's recording costs the code that allocates, in CPU time rather than wall time (so
 * that the machine's load matters less): the same allocation-heavy loop (ALLOC_MIB MiB of objects
 * of 16 B to 64 KiB, a tenth of them kept for a while) run ROUNDS times with the recording on and
 * off, interleaved (on off off on on off ...), in one JVM, its thread's CPU time measured by the
 * JVM. The recording is the plugin's: jdk.OldObjectSample only, with stack traces, cutoff 5 s,
 * in memory.
 *
 *   java -Xmx1g bench/heap-holders/AllocBench.java [ROUNDS] [ALLOC_MIB]     (defaults 10, 4096)
 */
public class AllocBench {
  static Object sink;

  public static void main(String[] args) {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
    long allocMib = args.length > 1 ? Long.parseLong(args[1]) : 4096;
    ThreadMXBean t = ManagementFactory.getThreadMXBean();
    work(allocMib / 4); // warm-up
    List<Long> on = new ArrayList<>();
    List<Long> off = new ArrayList<>();
    for (int r = 0; r < 2 * rounds; r++) {
      boolean recording = (r % 4 == 0) || (r % 4 == 3);
      Recording rec = null;
      if (recording) {
        rec = new Recording();
        rec.enable("jdk.OldObjectSample").withStackTrace().with("cutoff", "5 s");
        rec.setToDisk(false);
        rec.start();
      }
      long c0 = t.getCurrentThreadCpuTime();
      work(allocMib);
      long ms = (t.getCurrentThreadCpuTime() - c0) / 1_000_000;
      if (rec != null) {
        rec.close();
      }
      (recording ? on : off).add(ms);
      System.out.printf("round %d: recording %s, %d ms of CPU%n", r + 1, recording ? "on" : "off", ms);
    }
    long mOn = median(on);
    long mOff = median(off);
    System.out.printf(
        "result: on %s median %d ms, off %s median %d ms, on - off %+.2f%%%n",
        on, mOn, off, mOff, 100.0 * (mOn - mOff) / mOff);
  }

  static long median(List<Long> v) {
    long[] a = v.stream().mapToLong(Long::longValue).toArray();
    Arrays.sort(a);
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }

  /** Allocates {@code mib} MiB in objects of 16 B to 64 KiB; keeps one in ten for a while. */
  static void work(long mib) {
    long left = mib << 20;
    Object[] kept = new Object[4096];
    int k = 0;
    long seed = 42;
    while (left > 0) {
      seed = seed * 6364136223846793005L + 1442695040888963407L;
      int size = 16 << (int) ((seed >>> 60) & 11); // 16 B .. 32 KiB
      byte[] b = new byte[size];
      left -= size;
      if ((seed & 15) == 0) {
        kept[k++ & 4095] = b;
      }
      sink = b;
    }
    sink = kept;
  }
}
