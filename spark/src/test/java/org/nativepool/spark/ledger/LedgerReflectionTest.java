package org.nativepool.spark.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.testing.LogCapture;

/**
 * What the ledger cannot read by reflection is said once, at WARN, naming the class, field or
 * method, the real error (unwrapped from reflection's wrappers) and what is left out; never
 * swallowed, never repeated at every reading.
 */
class LedgerReflectionTest {
  /** The prefix of this test's made-up targets, which other tests of the same JVM ignore. */
  static final String TEST_ONLY = "test-only: ";

  @Test
  void aFailedReflectiveReadIsLoggedOnceAtWarnWithItsRealError() {
    String target = TEST_ONLY + "org.example.Missing.field (LedgerReflectionTest)";
    try (LogCapture log = LogCapture.attach(LedgerReader.class.getName())) {
      NoClassDefFoundError real =
          new NoClassDefFoundError("org/apache/arrow/vector/types/pojo/ArrowType$Utf8View");
      LedgerReader.cannotReflect(
          target, new InvocationTargetException(new ExceptionInInitializerError(real)), "x is out");
      LedgerReader.cannotReflect(target, new NoSuchFieldException("field"), "x is out");
      List<String> mine =
          log.messages().stream().filter(m -> m.contains("LedgerReflectionTest")).toList();
      assertEquals(
          List.of(
              "nativepool: ledger: cannot read "
                  + target
                  + ": java.lang.NoClassDefFoundError:"
                  + " org/apache/arrow/vector/types/pojo/ArrowType$Utf8View; x is out"),
          mine);
    }
    assertTrue(LedgerReader.checkReflection().contains(target), "reported targets");
  }
}
