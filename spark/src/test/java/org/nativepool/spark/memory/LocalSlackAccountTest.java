package org.nativepool.spark.memory;


import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link LocalSlackAccount} alone, without the library: a model of the Go reservation ({@code
 * goHeld}) is driven only by what the account tells its owner to ask for or give back, and {@link
 * #checkInvariants} runs after every step. Exact mode is the same code with quantum 0.
 */
class LocalSlackAccountTest {
  private static final long KIB = 1L << 10;

  /** The Go reservation as the owner would drive it. */
  private long goHeld;

  /**
   * After every step: {@code used >= 0}; {@code 0 <= slack <= 2Q}; exact mode ({@code Q = 0})
   * keeps no slack; the Go reservation holds exactly {@code used + slack}.
   */
  private void checkInvariants(LocalSlackAccount a, String step) {
    long q = a.quantum();
    assertTrue(a.used() >= 0, step + ": used " + a.used());
    assertTrue(a.slack() >= 0, step + ": slack " + a.slack());
    assertTrue(a.slack() <= 2 * q, step + ": slack " + a.slack() + " > 2Q " + 2 * q);
    if (q == 0) {
      assertEquals(0, a.slack(), step + ": exact mode kept slack");
    }
    assertEquals(a.used() + a.slack(), goHeld, step + ": used + slack vs the Go reservation");
  }

  /** One grow as Reservation does it; Go grants {@code ask} unless {@code refuse}. */
  private boolean grow(LocalSlackAccount a, long n, boolean refuse) {
    if (a.growLocally(n)) {
      return true;
    }
    long taken = a.takeSlack();
    long ask = a.ask(n - taken);
    assertTrue(ask >= n - taken, "ask " + ask + " < need " + (n - taken));
    if (a.quantum() > 0 && ask < Long.MAX_VALUE - a.quantum()) {
      assertEquals(0, ask % a.quantum(), "ask " + ask + " not a multiple of Q");
    }
    if (refuse) {
      a.putBack(taken);
    } else {
      goHeld += ask;
      a.commitGrow(n, taken, ask);
    }
    goHeld -= a.trim();
    return !refuse;
  }

  @ParameterizedTest(name = "Q={0}")
  @ValueSource(longs = {0, 1, 4 * KIB, 64 * KIB})
  void randomGrowsShrinksAndClearsKeepTheInvariants(long q) {
    long seed = System.nanoTime();
    SplittableRandom rnd = new SplittableRandom(seed);
    LocalSlackAccount a = new LocalSlackAccount(q);
    goHeld = 0;
    for (int i = 0; i < 20_000; i++) {
      String step = "seed " + seed + ", Q=" + q + ", step " + i;
      int op = rnd.nextInt(10);
      if (op < 5) {
        long n = rnd.nextLong(4 * Math.max(q, KIB));
        long before = a.used();
        boolean refuse = rnd.nextInt(8) == 0;
        boolean grown = grow(a, n, refuse);
        assertEquals(before + (grown ? n : 0), a.used(), step);
      } else if (op < 9) {
        long n = a.used() == 0 ? 0 : rnd.nextLong(a.used() + 1);
        goHeld -= a.shrink(n);
      } else {
        goHeld -= a.clear();
        assertEquals(0, a.used(), step);
      }
      checkInvariants(a, step);
    }
  }

  @ParameterizedTest(name = "n={0}")
  @ValueSource(longs = {1, 8 * KIB, 1L << 40})
  void exactModeCrossesForEveryGrowAndGivesEveryShrinkBack(long n) {
    LocalSlackAccount a = new LocalSlackAccount(0);
    goHeld = 0;
    assertFalse(a.growLocally(n), "a grow of n > 0 must cross in exact mode");
    assertEquals(n, a.ask(n), "exact mode does not round");
    assertTrue(grow(a, n, false));
    checkInvariants(a, "grow");
    assertEquals(n, a.shrink(n), "exact mode gives the whole shrink back");
    goHeld -= n;
    checkInvariants(a, "shrink");
  }

  @ParameterizedTest(name = "Q={0}")
  @ValueSource(longs = {1, 64 * KIB})
  void aShrinkGivesBackAllButQOnceTheSlackExceeds2Q(long q) {
    LocalSlackAccount a = new LocalSlackAccount(q);
    goHeld = 0;
    assertTrue(grow(a, 3 * q, false));
    assertEquals(0, a.shrink(2 * q), "2Q of slack stays local");
    checkInvariants(a, "shrink to 2Q");
    long back = a.shrink(q);
    goHeld -= back;
    assertEquals(2 * q, back);
    assertEquals(q, a.slack());
    checkInvariants(a, "shrink past 2Q");
  }

  @ParameterizedTest(name = "Q={0}")
  @ValueSource(longs = {0, 64 * KIB})
  void aShrinkBeyondUsedThrowsAndChangesNothing(long q) {
    LocalSlackAccount a = new LocalSlackAccount(q);
    goHeld = 0;
    assertTrue(grow(a, 10, false));
    long used = a.used();
    long slack = a.slack();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.shrink(11));
    assertEquals(
        "Cannot free the capacity 11 out of allocated size 10: invalid size", e.getMessage());
    assertEquals(used, a.used());
    assertEquals(slack, a.slack());
  }

  @ParameterizedTest(name = "Q={0}")
  @ValueSource(longs = {1, 64 * KIB})
  void askNearLongMaxDoesNotOverflow(long q) {
    LocalSlackAccount a = new LocalSlackAccount(q);
    assertEquals(Long.MAX_VALUE, a.ask(Long.MAX_VALUE));
    assertTrue(a.ask(Long.MAX_VALUE - q + 1) > 0);
  }

  @ParameterizedTest(name = "Q={0}")
  @ValueSource(longs = {-1, Long.MIN_VALUE})
  void aNegativeQuantumIsRejected(long q) {
    assertThrows(IllegalArgumentException.class, () -> new LocalSlackAccount(q));
  }
}
