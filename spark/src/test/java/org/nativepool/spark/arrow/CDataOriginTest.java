package org.nativepool.spark.arrow;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CDataOriginTest {
  private static final ClassLoader LOADER = CDataOriginTest.class.getClassLoader();

  @Test
  void nativepoolsOwnCopyConflictsOnlyWithCometInTheSamePlugins() {
    assertNull(CDataOrigin.conflict("", LOADER));
    assertNull(CDataOrigin.conflict("org.nativepool.spark.NativePoolPlugin", LOADER));
    String w =
        CDataOrigin.conflict(
            "org.apache.spark.CometPlugin, org.nativepool.spark.NativePoolPlugin", LOADER);
    assertNotNull(w);
    assertTrue(w.contains("NoSuchMethodError: org.apache.arrow.c.SchemaImporter.<init>"), w);
    assertTrue(w.contains("Put Comet's jar before nativepool's"), w);
    assertTrue(w.contains("arrow-c-data"), "names the jar it loads: " + w);
  }

  @Test
  void withoutArrowsCDataOnTheClassPathThereIsNothingToSay() {
    ClassLoader none = new ClassLoader(null) {};
    assertNull(CDataOrigin.conflict("org.apache.spark.CometPlugin", none));
  }
}
