package org.nativepool.spark.arrow;

import java.net.URL;
import java.security.CodeSource;
import org.apache.arrow.memory.BufferAllocator;
import org.nativepool.spark.config.CometDeployment;

/**
 * Which copy of Arrow's C Data Interface ({@code org.apache.arrow.c}) the JVM loads, and whether
 * another engine's plugin needs a different one. The plugin jar bundles {@code arrow-c-data}
 * unrelocated, at Spark's Arrow version, for its engines' batches (docs/DEPLOYING.md, "Arrow").
 * Comet bundles its own {@code org.apache.arrow.c} too, rewritten against its shaded Arrow ({@code
 * org.apache.comet.shaded.arrow}): with both jars, whichever comes first on the classpath is the
 * one every class sees. With nativepool's first, Comet's tasks fail with {@code
 * NoSuchMethodError: org.apache.arrow.c.SchemaImporter.<init>}; with Comet's first, Comet works and
 * a nativepool engine cannot move Arrow batches in that application. {@link #conflict} says which,
 * for the startup log. Stateless.
 */
public final class CDataOrigin {
  private CDataOrigin() {}

  /** The class whose origin tells the copy: Comet calls its constructor with shaded types. */
  static final String PROBE = "org.apache.arrow.c.SchemaImporter";

  /**
   * Why the loaded {@code org.apache.arrow.c} does not suit another engine named in {@code
   * plugins} ({@code spark.plugins}), or nativepool's engines, with what to do; null when it suits
   * both (or cannot be found, which the Arrow crossing reports on its own).
   *
   * @param plugins the value of {@code spark.plugins} (may be empty)
   * @param loader the loader the application's classes come from
   */
  public static String conflict(String plugins, ClassLoader loader) {
    Class<?> importer;
    try {
      importer = Class.forName(PROBE, false, loader);
    } catch (ClassNotFoundException | LinkageError e) {
      return null;
    }
    boolean comet = CometDeployment.inPlugins(plugins);
    boolean ours = hasConstructorFor(importer, BufferAllocator.class);
    String where = origin(importer);
    if (comet && ours) {
      return "nativepool: Comet is in spark.plugins, and its tasks will fail with"
          + " NoSuchMethodError: org.apache.arrow.c.SchemaImporter.<init>: the JVM loads"
          + " org.apache.arrow.c from "
          + where
          + " (nativepool's, against Spark's Arrow) instead of Comet's, rewritten against its"
          + " shaded Arrow. Put Comet's jar before nativepool's in --jars / spark.jars (and on"
          + " extraClassPath); docs/DEPLOYING.md, \"Comet\"";
    }
    if (!ours) {
      return "nativepool: the JVM loads org.apache.arrow.c from "
          + where
          + ", another engine's copy (Comet's, rewritten against its shaded Arrow): nativepool's"
          + " own engines cannot move Arrow batches in this application; its guard, ledger and"
          + " pages work as usual";
    }
    return null;
  }

  private static boolean hasConstructorFor(Class<?> c, Class<?> allocator) {
    try {
      c.getDeclaredConstructor(allocator);
      return true;
    } catch (NoSuchMethodException | LinkageError e) {
      return false;
    }
  }

  private static String origin(Class<?> c) {
    CodeSource cs = c.getProtectionDomain() == null ? null : c.getProtectionDomain().getCodeSource();
    URL u = cs == null ? null : cs.getLocation();
    return u == null ? "an unknown jar" : u.toString();
  }
}
