package org.nativepool.spark.jni;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A JVM check of the Go side of the bridge, run by jni/jvm_test.go (TestJVMSmoke) under
 * -Xcheck:jni: every native of jni/API.md, exception classes and messages, the original
 * throwable rethrown from each upcall, re-entrant spill, concurrent threads. Prints "ok: …" or
 * "FAIL: …" per check and "SMOKE PASSED" at the end; exits 1 on any failure.
 */
public class Smoke {
  static int failures = 0;
  static void check(boolean ok, String what) {
    if (!ok) { failures++; System.out.println("FAIL: " + what); } else System.out.println("ok: " + what);
  }
  interface Body { void run() throws Throwable; }
  static Throwable thrown(Body b) {
    try { b.run(); return null; } catch (Throwable t) { return t; }
  }
  static class Boom extends RuntimeException { Boom(String m) { super(m); } }
  @SuppressWarnings("unchecked")
  static <T extends Throwable> void sneaky(Throwable t) throws T { throw (T) t; }

  static class Up implements Upstream {
    final AtomicLong held = new AtomicLong();
    volatile long budget = 1 << 20;
    volatile Throwable throwOnAcquire, throwOnRelease;
    volatile Runnable onAcquire;
    volatile String lastThread;
    public long acquireMemory(long n) {
      Thread me = Thread.currentThread();
      lastThread = me.getName() + (me.isDaemon() ? " (daemon)" : "");
      if (onAcquire != null) { Runnable r = onAcquire; onAcquire = null; r.run(); }
      if (throwOnAcquire != null) { Throwable t = throwOnAcquire; throwOnAcquire = null; Smoke.<RuntimeException>sneaky(t); }
      long got = Math.max(0, Math.min(n, budget - held.get()));
      held.addAndGet(got);
      return got;
    }
    public void releaseMemory(long n) {
      if (throwOnRelease != null) { Throwable t = throwOnRelease; throwOnRelease = null; Smoke.<RuntimeException>sneaky(t); }
      if (n > held.get()) throw new IllegalStateException("over-release " + n);
      held.addAndGet(-n);
    }
  }

  /** A task owner as the real module's: a TaskOwner (fields written by Go) that grants all. */
  static final class Owner extends TaskOwner {
    final AtomicLong held = new AtomicLong();
    public long acquireMemory(long n) { held.addAndGet(n); return n; }
    public void releaseMemory(long n) { held.addAndGet(-n); }
  }

  public static void main(String[] args) throws Throwable {
    System.load(args[0]);
    String v = LibraryLoader.version0();
    check(v != null && !v.isEmpty() && !v.contains("$"), "version0 before init0: " + v);
    Throwable t = thrown(() -> Natives.size0(1));
    check(t instanceof IllegalArgumentException, "before init0: forged handle -> IAE: " + t);
    LibraryLoader.init0();
    LibraryLoader.init0();
    check(true, "init0 twice");

    Up up = new Up();
    long p = Natives.openPool0(7, 0, 1000, 0, up);
    check(p != 0, "openPool0 -> " + Long.toHexString(p));
    long p2 = Natives.openPool0(7, 0, 1000, 0, new Up());
    check(p2 != 0 && p2 != p, "join -> new handle");
    t = thrown(() -> Natives.openPool0(7, 1, 0, 0, new Up()));
    check(t instanceof IllegalStateException, "mismatch -> ISE: " + t);
    t = thrown(() -> Natives.openPool0(8, 5, 0, 0, new Up()));
    check(t instanceof IllegalArgumentException, "bad kind -> IAE: " + t);
    t = thrown(() -> Natives.openPool0(8, 0, -1, 0, new Up()));
    check(t instanceof IllegalArgumentException, "neg size -> IAE: " + t);

    long[] resHolder = new long[1];
    Spiller spiller = target -> {
      long size = Natives.size0(resHolder[0]);
      long give = Math.min(size, target);
      if (give > 0) Natives.shrink0(resHolder[0], give);
      return give;
    };
    long r = Natives.newReservation0(p, "sort \u00e9\uD83D\uDE00", true, spiller);
    resHolder[0] = r;
    check(r != 0, "newReservation0");
    long r2 = Natives.newReservation0(p2, "agg", false, null);
    check(Natives.tryGrow0(r, 300) == null, "tryGrow0 300 ok");
    check(up.held.get() == 300, "held 300 (chunk 0) = " + up.held.get());
    check(Natives.tryGrow0(r2, 200) == null, "tryGrow0 r2 200 ok");
    String refusal = Natives.tryGrow0(r2, 900);
    check(refusal != null && refusal.startsWith("Resources exhausted"), "refusal: " + refusal);
    check(refusal != null && refusal.contains("sort \u00e9\uD83D\uDE00"), "refusal names consumer with unicode");
    t = thrown(() -> Natives.shrink0(r2, 1000));
    check(t instanceof IllegalArgumentException, "shrink > size -> IAE: " + t);
    t = thrown(() -> Natives.tryGrow0(r2, -1));
    check(t instanceof IllegalArgumentException, "negative -> IAE: " + t);
    t = thrown(() -> Natives.size0(p));
    check(t instanceof IllegalArgumentException && t.getMessage().contains("a pool handle"), "wrong type -> IAE: " + t);
    t = thrown(() -> Natives.size0(0));
    check(t instanceof IllegalArgumentException, "zero -> IAE: " + t);

    // exception in acquireMemory: tryGrow0 rethrows the original
    Boom boom = new Boom("spark says no");
    up.throwOnAcquire = boom;
    t = thrown(() -> Natives.tryGrow0(r, 100));
    check(t == boom, "tryGrow0 rethrows the original throwable: " + t);
    InterruptedException ie = new InterruptedException("killed");
    up.throwOnAcquire = ie;
    long before = Natives.size0(r2);
    t = thrown(() -> Natives.grow0(r2, 100));
    check(t == ie, "grow0 rethrows the swallowed InterruptedException: " + t);
    check(Natives.size0(r2) == before + 100, "grow recorded as overcommit");
    long[] st = Natives.poolStats0(p);
    check(st.length == 13 && st[3] == 100, "overcommit 100: " + Arrays.toString(st));
    Natives.shrink0(r2, 100);

    // release exception during shrink
    Boom boom2 = new Boom("release failed");
    up.throwOnRelease = boom2;
    t = thrown(() -> Natives.shrink0(r2, 50));
    check(t == boom2, "shrink0 rethrows releaseMemory's exception: " + t);
    check(Natives.size0(r2) == 150, "shrink recorded: " + Natives.size0(r2));
    check(Natives.poolStats0(p)[1] == up.held.get(), "after a failed release both sides agree on held: go " + Natives.poolStats0(p)[1] + " java " + up.held.get());

    // reclaim: spiller shrinks r re-entrantly
    long heldBefore = up.held.get();
    // What the pool holds beyond its reservations: slack, and the 50 bytes
    // whose release failed (owed: still charged, handed back by the sweep).
    long[] held = Natives.poolStats0(p);
    long slackBefore = held[1] - held[0] + held[3];
    long rBefore = Natives.size0(r);
    long freed = Natives.reclaim0(p, 200);
    check(freed == 200 && up.held.get() == heldBefore - 200, "reclaim0 freed " + freed + " held " + up.held.get());
    check(Natives.size0(r) == rBefore - (200 - slackBefore), "slack and owed bytes first, then the spiller shrank r: " + rBefore + " -> " + Natives.size0(r) + " (slack " + slackBefore + ")");

    // nested: acquireMemory calls reclaim0 on the same thread (Spark spilling the requester's pool)
    long[] nested = new long[1];
    up.budget = up.held.get(); // nothing left without a spill
    up.onAcquire = () -> { nested[0] = Natives.reclaim0(p, 100); };
    String res = Natives.tryGrow0(r2, 50);
    check(nested[0] == 100, "nested reclaim0 inside acquireMemory freed " + nested[0]);
    check(res == null, "tryGrow after nested spill: " + res);
    up.budget = 1 << 20;

    // a spiller that throws: reclaim0 rethrows it
    Boom boom3 = new Boom("spill failed");
    long r3 = Natives.newReservation0(p, "bad spiller", true, target -> { throw boom3; });
    Natives.grow0(r3, 10);
    t = thrown(() -> Natives.reclaim0(p, 1 << 30));
    check(t == boom3, "reclaim0 rethrows spiller exception: " + t);
    // nested: a spiller throws inside reclaim0, which Spark called from inside acquireMemory; the
    // nested reclaim0 rethrows it into acquireMemory, and the outer tryGrow0 rethrows it to us
    up.budget = up.held.get();
    up.onAcquire = () -> Natives.reclaim0(p, 1 << 30);
    t = thrown(() -> Natives.tryGrow0(r2, 1));
    check(t == boom3, "spiller exception crosses nested reclaim0 and outer tryGrow0 unchanged: " + t);
    up.budget = 1 << 20;
    Natives.closeReservation0(r3);
    t = thrown(() -> Natives.size0(r3));
    check(t instanceof IllegalStateException, "closed reservation -> ISE: " + t);
    t = thrown(() -> Natives.closeReservation0(r3));
    check(t instanceof IllegalStateException, "second close -> ISE: " + t);

    // concurrency
    Thread[] ths = new Thread[8];
    long[] rs = new long[8];
    for (int i = 0; i < 8; i++) rs[i] = Natives.newReservation0(p, "t" + i, false, null);
    for (int i = 0; i < 8; i++) {
      final long rr = rs[i];
      ths[i] = new Thread(() -> {
        for (int k = 0; k < 20000; k++) { Natives.grow0(rr, 3); Natives.shrink0(rr, 3); Natives.tryGrow0(rr, 1); Natives.shrink0(rr, 1); }
      });
      ths[i].start();
    }
    for (Thread th : ths) th.join();
    for (long x : rs) { check(Natives.size0(x) == 0, "thread res size 0"); Natives.closeReservation0(x); }

    Natives.configure0(true, new long[] {100, 50});
    t = thrown(() -> Natives.configure0(false, new long[] {-1}));
    check(t instanceof IllegalArgumentException, "bad threshold -> IAE: " + t);
    Natives.configure0(false, null);

    t = thrown(() -> Natives.configureRuntime0(-1, 0, 0));
    check(t instanceof IllegalArgumentException, "negative mmap threshold -> IAE: " + t);
    t = thrown(() -> Natives.configureRuntime0(64L << 20, 0, 0));
    check(t instanceof IllegalArgumentException, "mmap threshold above 32 MiB -> IAE: " + t);
    Natives.configureRuntime0(128 << 10, 256L << 20, 0);

    long[] ps = Natives.processStats0();
    check(ps.length == 45 && ps[0] == 1, "processStats " + Arrays.toString(ps));
    check(ps[29] == -1 && ps[32] == 0, "no pod guard yet: GUARD_LIMIT -1, GUARD_RESERVE 0: " + Arrays.toString(ps));
    check(ps[21] >= 0, "MALLOC_RETAINED (mallinfo2 on glibc, index 21): " + ps[21]);
    boolean userEnv = System.getenv("MALLOC_MMAP_THRESHOLD_") != null;
    check(ps[12] == 256L << 20, "GO_MEMORY_LIMIT set by configureRuntime0: " + ps[12]);
    check(ps[13] > 0 && ps[14] > 0 && ps[15] >= ps[14], "Go baseline, mapped, peak: " + Arrays.toString(ps));
    check(ps[18] > 0, "VM_HWM: " + ps[18]);
    check(ps[20] == (userEnv ? 0 : 128 << 10), "MALLOC_MMAP_THRESHOLD: " + ps[20]);

    long[] spill = Natives.takeSpill0(12345);
    check(spill.length == 2 && spill[0] == 0 && spill[1] == 0, "takeSpill0 of a task nothing reported for: " + Arrays.toString(spill));

    // close: r, r2 still open -> leak report at last close
    Natives.closePool0(p2);
    Natives.closePool0(p);
    t = thrown(() -> Natives.closePool0(p));
    check(t instanceof IllegalStateException, "double closePool0 -> ISE: " + t);
    check(up.held.get() == 0, "everything released at last close: held " + up.held.get());
    t = thrown(() -> Natives.tryGrow0(r, 1));
    check(t instanceof IllegalStateException, "tryGrow on closed pool -> ISE: " + t);
    Natives.shrink0(r, Natives.size0(r));
    Natives.closeReservation0(r);
    Natives.closeReservation0(r2);
    ps = Natives.processStats0();
    check(ps[0] == 0 && ps[10] == 1 && ps[9] >= 1, "processStats after close " + Arrays.toString(ps));

    // leaks: Java's own reports count with Go's, and are listed with the Go ones
    long leaksBefore = ps[10];
    Natives.reportLeak0(77, "java-op", "reservation", 1000, 0, "a.B.c(B.java:7)");
    Natives.reportLeak0(77, "java-arrow", "java-arrow", 64, 64, null);
    Natives.leakResident0(64);
    ps = Natives.processStats0();
    check(ps[10] == leaksBefore + 2 && ps[27] == 64, "Java leaks counted, resident: " + Arrays.toString(ps));
    String recent = Natives.recentLeaks0();
    check(recent.endsWith("77\tjava-op\treservation\t1000\t0\ta.B.c(B.java:7)\n77\tjava-arrow\tjava-arrow\t64\t64\t\n"), "recentLeaks0: " + recent);
    t = thrown(() -> Natives.reportLeak0(77, "x", "nonsense", 1, 0, null));
    check(t instanceof IllegalArgumentException, "unknown leak kind -> IAE: " + t);
    t = thrown(() -> Natives.reportLeak0(77, null, "reservation", 1, 0, null));
    check(t instanceof IllegalArgumentException, "null consumer -> IAE: " + t);
    t = thrown(() -> Natives.leakResident0(-1));
    check(t instanceof IllegalArgumentException, "negative resident -> IAE: " + t);
    Natives.leakResident0(0);
    check(Natives.liveNative0(10).isEmpty(), "liveNative0 without Arrow allocators: empty");

    // the pod guard: a limit far above this JVM, against its resident set (or a cgroup's)
    OffHeap offHeap = new OffHeap() {
      public long take(long n, long nativeHeld) { return 0; }
      public long keep(long n) { return 0; }
      public void giveBack(long n) { throw new IllegalStateException("nothing was taken"); }
      public long free() { return 0; }
    };
    t = thrown(() -> Natives.configureGuard0(true, -1, 0, false, false, offHeap));
    check(t instanceof IllegalArgumentException, "negative reserve -> IAE: " + t);
    t = thrown(() -> Natives.addSpillDir0(null));
    check(t instanceof IllegalArgumentException, "null spill dir -> IAE: " + t);
    t = thrown(() -> Natives.addSpillDir0("relative/dir"));
    check(t instanceof IllegalArgumentException, "relative spill dir -> IAE: " + t);
    Natives.addSpillDir0(System.getProperty("java.io.tmpdir"));
    Natives.configureGuard0(true, 64L << 20, 1L << 40, true, false, offHeap);
    long guardLimit = -1;
    for (int i = 0; i < 500 && guardLimit < 0; i++) {
      Thread.sleep(10);
      guardLimit = Natives.processStats0()[29];
    }
    ps = Natives.processStats0();
    check(guardLimit > 0 && ps[32] == 64L << 20 && ps[31] == ps[29] - ps[30], "the guard's figures: " + Arrays.toString(ps));
    check(Natives.guardEpisodes0().isEmpty(), "no episode far from the limit: " + Natives.guardEpisodes0());
    Natives.configureGuard0(false, 0, 0, false, false, null);
    check(Natives.processStats0()[29] == -1, "the guard off: GUARD_LIMIT -1");
    // against this process tree's resident memory, as on YARN: the JVM's own pages at least
    Natives.configureGuard0(true, 64L << 20, 1L << 40, false, true, null);
    long treeResident = -1;
    for (int i = 0; i < 500 && treeResident <= 0; i++) {
      Thread.sleep(10);
      treeResident = Natives.processStats0()[30];
    }
    check(treeResident > 0 && Natives.processStats0()[29] > 0, "the guard against the process tree: " + Arrays.toString(Natives.processStats0()));
    Natives.configureGuard0(false, 0, 0, false, false, null);
    t = thrown(() -> Natives.liveNative0(-1));
    check(t instanceof IllegalArgumentException, "liveNative0(-1) -> IAE: " + t);

    // many short-lived Java threads: each binds a Go M on its first call and drops it at exit
    long p3 = Natives.openPool0(9, 1, 0, 0, new Up());
    for (int i = 0; i < 200; i++) {
      Thread th = new Thread(() -> {
        long rr = Natives.newReservation0(p3, "short", false, null);
        Natives.tryGrow0(rr, 10);
        Natives.closeReservation0(rr);
      });
      th.start();
      th.join();
    }
    long[] st3 = Natives.poolStats0(p3);
    check(st3[0] == 0 && st3[5] == 200 && st3[6] == 200, "200 short-lived threads: " + Arrays.toString(st3));
    Natives.closePool0(p3);

    // upcalls from goroutines the JVM does not know: attached as daemons on demand, detached by the
    // pthread_key destructor when Go retires the thread
    Up up4 = new Up();
    long p4 = Natives.openPool0(10, 1, 0, 0, up4);
    long r4 = Natives.newReservation0(p4, "goroutine", false, null);
    int threadsBefore = Thread.getAllStackTraces().size();
    for (int i = 0; i < 200; i++) {
      String res4 = Natives.goroutineTryGrow0(r4, 10, true);
      if (res4 != null) { check(false, "goroutine tryGrow refused: " + res4); break; }
    }
    check(up4.lastThread != null && up4.lastThread.equals("nativepool-go (daemon)"), "upcall ran on an attached daemon thread: " + up4.lastThread);
    check(Natives.size0(r4) == 2000 && up4.held.get() == 2000, "200 goroutine grows accounted");
    int threadsAfter = Thread.getAllStackTraces().size();
    check(threadsAfter - threadsBefore < 20, "exited Go threads were detached: threads " + threadsBefore + " -> " + threadsAfter);
    Boom boom4 = new Boom("from a goroutine");
    up4.throwOnAcquire = boom4;
    t = thrown(() -> Natives.goroutineTryGrow0(r4, 10, false));
    check(t == boom4, "exception raised on a goroutine's thread is rethrown unchanged: " + t);
    Natives.shrink0(r4, 2000);
    Natives.closeReservation0(r4);
    Natives.closePool0(p4);

    // one owner per task: the creating open's candidate gets the task handle and is the task's
    // owner; a join's candidate gets no handle and learns the owner; spill goes through the handle
    Owner a = new Owner(), b = new Owner();
    long p5 = Natives.openPool0(20, 1, 0, 0, a);
    check(a.taskHandle() != 0 && a.registeredOwner() == a, "create: the candidate owns the task, handle " + Long.toHexString(a.taskHandle()));
    long p6 = Natives.openPool0(20, 1, 0, 0, b);
    check(b.taskHandle() == 0 && b.registeredOwner() == a, "join: no handle, the owner comes from Go: " + b.registeredOwner());
    long[] res5 = new long[1];
    res5[0] = Natives.newReservation0(p6, "spillable", true, target -> {
      long give = Math.min(Natives.size0(res5[0]), target);
      if (give > 0) Natives.shrink0(res5[0], give);
      return give;
    });
    check(Natives.tryGrow0(res5[0], 500) == null && a.held.get() == 500, "a join's reservation borrows from the owner");
    long freed5 = Natives.reclaimTask0(a.taskHandle(), 200);
    check(freed5 == 200 && a.held.get() == 300, "reclaimTask0 spills through the task handle: " + freed5);
    t = thrown(() -> Natives.reclaimTask0(p5, 1));
    check(t instanceof IllegalArgumentException, "reclaimTask0(pool handle) -> IAE: " + t);
    Natives.closeReservation0(res5[0]);
    Natives.closePool0(p5);
    Natives.closePool0(p6);
    check(Natives.reclaimTask0(a.taskHandle(), 100) == 0, "reclaimTask0 after the pool closed -> 0");

    // Go's records through GoLog (configureLog0): per-package logger, task, level gating in Go,
    // from a goroutine on a thread the JVM does not know, and never an exception back into Go
    GoLog.take();
    Natives.goroutineLog0(1, 0, "before configureLog0", false);
    check(GoLog.take().isEmpty(), "before configureLog0 records stay in Go (slog's default handler)");
    t = thrown(() -> Natives.configureLog0("org.nativepool.pool=INFO"));
    check(t instanceof IllegalArgumentException, "configureLog0 without org.nativepool -> IAE: " + t);
    Natives.configureLog0("org.nativepool=INFO,org.nativepool.pool=WARN");
    threadsBefore = Thread.getAllStackTraces().size();
    for (int i = 0; i < 100; i++) {
      Natives.goroutineLog0(77, 0, "from a goroutine k=" + i, true);
    }
    List<String> logged = GoLog.take();
    check(logged.size() == 100 && logged.get(0).equals("2 org.nativepool.jni 77 from a goroutine k=0 | nativepool-go (daemon)"),
        "an INFO record made on a goroutine reaches GoLog.log on its package's logger with its task: " + (logged.isEmpty() ? "none" : logged.get(0)));
    threadsAfter = Thread.getAllStackTraces().size();
    check(threadsAfter - threadsBefore < 20, "log upcalls' exited Go threads were detached: threads " + threadsBefore + " -> " + threadsAfter);
    Natives.goroutineLog0(-1, -4, "debug", false);
    Natives.goroutineLog0(-1, 8, "error", false);
    logged = GoLog.take();
    check(logged.size() == 1 && logged.get(0).startsWith("4 org.nativepool.jni -1 error |"), "a DEBUG record never reaches Java, an ERROR one does: " + logged);
    GoLog.throwNext = true;
    t = thrown(() -> Natives.goroutineLog0(-1, 4, "lost to a throwing backend", false));
    check(t == null && GoLog.take().isEmpty(), "an exception in GoLog.log stays out of Go and the caller: " + t);
    t = thrown(() -> Natives.logWithPendingException0("while an exception is pending"));
    check(t instanceof IllegalStateException && "pending".equals(t.getMessage()) && GoLog.take().isEmpty(),
        "a record made while an exception is pending does not touch the JVM: " + t);
    Natives.goroutineLog0(-1, 4, "after", false);
    check(GoLog.take().size() == 1, "logging works after both");

    System.out.println(failures == 0 ? "SMOKE PASSED" : ("SMOKE FAILED " + failures));
    System.exit(failures == 0 ? 0 : 1);
  }
}
