package org.nativepool.spark.jni;

/**
 * Run by hand (see bench/RESULTS.md, "JNI bridge, Go side"); needs the library built with the
 * nativepool_jvmtest tag for noop0. Java-side cost of the bridge, per call: min (median) ns over rounds. Cases:
 * size0 (lookup only), tryGrow0+shrink0 with an 8 MiB chunk (no upcall) and with chunk 0 (one
 * acquireMemory + one releaseMemory upcall per pair), and a plain Java AtomicLong pair as the
 * floor.
 */
public class Bench {
  static final class Up implements Upstream {
    long held;
    public long acquireMemory(long n) { held += n; return n; }
    public void releaseMemory(long n) { held -= n; }
  }
  interface Case { void run(long iters); }

  static final java.util.List<String> names = new java.util.ArrayList<>();
  static final java.util.List<Case> cases = new java.util.ArrayList<>();
  static final java.util.List<Long> iters = new java.util.ArrayList<>();

  static void add(String name, long n, Case c) { names.add(name); iters.add(n); cases.add(c); }

  /** Runs the cases round-robin (so load changes hit all of them alike); min (median) per case. */
  static void runAll(int rounds) {
    for (int i = 0; i < cases.size(); i++) for (int w = 0; w < 3; w++) cases.get(i).run(iters.get(i));
    double[][] ns = new double[cases.size()][rounds];
    for (int r = 0; r < rounds; r++) {
      for (int i = 0; i < cases.size(); i++) {
        long t0 = System.nanoTime();
        cases.get(i).run(iters.get(i));
        ns[i][r] = (System.nanoTime() - t0) / (double) iters.get(i);
      }
    }
    for (int i = 0; i < cases.size(); i++) {
      java.util.Arrays.sort(ns[i]);
      System.out.printf("%-44s %8.1f (%8.1f) ns/op%n", names.get(i), ns[i][0], ns[i][rounds / 2]);
    }
  }

  public static void main(String[] args) {
    System.load(args[0]);
    LibraryLoader.init0();
    long n = 2_000_000;
    long pChunk = Natives.openPool0(1, 1, 0, 8 << 20, new Up());
    long rChunk = Natives.newReservation0(pChunk, "bench", false, null);
    long pExact = Natives.openPool0(2, 1, 0, 0, new Up());
    long rExact = Natives.newReservation0(pExact, "bench", false, null);
    java.util.concurrent.atomic.AtomicLong a = new java.util.concurrent.atomic.AtomicLong();
    add("java AtomicLong add+sub pair", n * 10, it -> { for (long i = 0; i < it; i++) { a.addAndGet(1024); a.addAndGet(-1024); } });
    long[] sink = new long[1];
    add("noop0 (bare cgo export, the floor)", n, it -> { long x = 0; for (long i = 0; i < it; i++) x = Natives.noop0(x); sink[0] += x; });
    add("size0", n, it -> { for (long i = 0; i < it; i++) Natives.size0(rChunk); });
    add("tryGrow0+shrink0, chunk 8 MiB (no upcall)", n, it -> { for (long i = 0; i < it; i++) { Natives.tryGrow0(rChunk, 1024); Natives.shrink0(rChunk, 1024); } });
    add("grow0+shrink0, chunk 8 MiB (no upcall)", n, it -> { for (long i = 0; i < it; i++) { Natives.grow0(rChunk, 1024); Natives.shrink0(rChunk, 1024); } });
    add("tryGrow0+shrink0, chunk 0 (2 upcalls)", n / 2, it -> { for (long i = 0; i < it; i++) { Natives.tryGrow0(rExact, 1024); Natives.shrink0(rExact, 1024); } });
    runAll(9);
    Natives.closeReservation0(rChunk);
    Natives.closeReservation0(rExact);
    Natives.closePool0(pChunk);
    Natives.closePool0(pExact);
  }
}
