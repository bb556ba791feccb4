package org.nativepool.spark.memory;

import java.security.CodeSource;
import java.util.Objects;
import java.util.Optional;
import org.nativepool.spark.config.NativePoolConf;

/**
 * The Java caller of a native allocation or a reservation, recorded when allocation sites are on
 * ({@link NativePoolConf#ALLOCATION_SITES}, which the executor plugin applies through {@link
 * ExecutorState#setAllocationSites}): the first frame of the calling thread outside nativepool's own
 * classes, Arrow and the JDK. A leak report then names the method that asked for the memory, not the plugin's
 * code in between (the Go side skips its own frames the same way, {@code ffi/sites.go}).
 *
 * <p>nativepool's own classes are those loaded from the plugin's own code source (its jar, or its
 * classes directory): a class of another jar in the same package (the examples, tests) is a
 * caller, as Go's own test files are.
 *
 * <p>Off by default, and then {@link #capture()} returns {@code null} after one volatile read.
 * Safe for concurrent use.
 */
public final class CallerSites {
  private static final StackWalker WALKER =
      StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE);

  /** The plugin's own code source, or null if the JVM does not say. */
  private static final CodeSource OWN = codeSource(CallerSites.class);

  private CallerSites() {}

  /**
   * The calling thread's first frame outside nativepool, Arrow and the JDK, as Go's leak reports
   * write a site: {@code pkg.Class.method (File.java:42)}; null when sites are off, or if every
   * frame is internal.
   */
  public static String capture() {
    if (!ExecutorState.allocationSites()) {
      return null;
    }
    Optional<StackWalker.StackFrame> f =
        WALKER.walk(s -> s.filter(x -> !internal(x.getDeclaringClass())).findFirst());
    return f.map(CallerSites::format).orElse(null);
  }

  private static String format(StackWalker.StackFrame f) {
    String file = f.getFileName();
    return f.getClassName()
        + "."
        + f.getMethodName()
        + " ("
        + (file == null ? "Unknown Source" : file + ":" + f.getLineNumber())
        + ")";
  }

  /** Whether a class is machinery between a caller and nativepool's natives. */
  static boolean internal(Class<?> c) {
    String n = c.getName();
    if (n.startsWith("java.")
        || n.startsWith("jdk.")
        || n.startsWith("sun.")
        || n.startsWith("org.apache.arrow.")) {
      return true;
    }
    return n.startsWith("org.nativepool.spark.") && Objects.equals(codeSource(c), OWN);
  }

  private static CodeSource codeSource(Class<?> c) {
    java.security.ProtectionDomain d = c.getProtectionDomain();
    return d == null ? null : d.getCodeSource();
  }
}
