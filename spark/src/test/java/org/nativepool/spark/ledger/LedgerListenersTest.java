package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.LedgerSettings;

/**
 * Ledger listener classes by name: the driver refuses, at the application's start, a class that
 * the executors could not make, naming the rule; an executor that cannot make one anyway (its
 * classpath lacks it) leaves it out and runs on, since monitoring never disables the pools. No
 * Spark and no library needed.
 */
class LedgerListenersTest {
  /** A listener, as an application would ship one. */
  public static final class Good implements LedgerListener {
    /** Made by name. */
    public Good() {}
  }

  /** A listener without a public no-argument constructor. */
  public static final class NoDefault implements LedgerListener {
    /** Not makeable by name. */
    public NoDefault(String unused) {}
  }

  private static String refusal(String name) {
    return assertThrows(
            IllegalArgumentException.class,
            () ->
                ExecutorLedger.checkListenerClasses(
                    List.of(name), LedgerListenersTest.class.getClassLoader()))
        .getMessage();
  }

  @Test
  void theDriverRefusesAClassTheExecutorsCouldNotMakeNamingTheRule() {
    ExecutorLedger.checkListenerClasses(
        List.of(Good.class.getName()), LedgerListenersTest.class.getClassLoader());
    String rule =
        "; each must be a public class implementing org.nativepool.spark.ledger.LedgerListener"
            + " with a public no-argument constructor";
    assertTrue(refusal("com.example.Nope").contains("not found on the driver's classpath"));
    assertTrue(refusal("com.example.Nope").endsWith(rule), refusal("com.example.Nope"));
    assertEquals(
        "nativepool: spark.nativepool.ledger.listeners = 'java.lang.String': class java.lang.String"
            + " does not implement org.nativepool.spark.ledger.LedgerListener"
            + rule,
        refusal("java.lang.String"));
    assertTrue(
        refusal(NoDefault.class.getName()).contains("has no public no-argument constructor"),
        refusal(NoDefault.class.getName()));
  }

  @Test
  void anExecutorLeavesOutAListenerItCannotMakeAndRunsOn() {
    LedgerSettings settings =
        new LedgerSettings(
            List.of(), 0.1, List.of("com.example.Nope", Good.class.getName()), 25, 4, 16L << 20);
    ExecutorLedger ledger =
        new ExecutorLedger("3", settings, new LedgerReader(), null, m -> {}, n -> List.of());
    List<String> failed = ledger.loadListeners(LedgerListenersTest.class.getClassLoader());
    assertEquals(1, failed.size(), failed::toString);
    assertTrue(
        failed.get(0).startsWith(
            "nativepool: executor 3: spark.nativepool.ledger.listeners: cannot make a"
                + " LedgerListener of com.example.Nope"),
        failed.get(0));
    assertTrue(failed.get(0).endsWith("; the ledger runs without it"), failed.get(0));
  }
}
