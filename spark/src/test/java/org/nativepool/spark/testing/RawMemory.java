package org.nativepool.spark.testing;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;

/**
 * Reads and writes a long at a raw address, for tests that inspect or forge C Data Interface
 * structs. Arrow's {@code MemoryUtil} cannot serve every Spark line: Arrow 12 (Spark 3.5) has no
 * {@code getLong(long)} and Arrow 15 on made its {@code UNSAFE} private. This takes the JDK's
 * {@code sun.misc.Unsafe} by reflection (no compile-time reference to an internal API).
 */
public final class RawMemory {
  private static final MethodHandle GET_LONG;
  private static final MethodHandle PUT_LONG;

  static {
    try {
      Class<?> c = Class.forName("sun.misc.Unsafe");
      Field f = c.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      Object unsafe = f.get(null);
      MethodHandles.Lookup l = MethodHandles.publicLookup();
      GET_LONG =
          l.findVirtual(c, "getLong", MethodType.methodType(long.class, long.class)).bindTo(unsafe);
      PUT_LONG =
          l.findVirtual(c, "putLong", MethodType.methodType(void.class, long.class, long.class))
              .bindTo(unsafe);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private RawMemory() {}

  /** The long at {@code address}. */
  public static long getLong(long address) {
    try {
      return (long) GET_LONG.invokeExact(address);
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /** Writes {@code value} at {@code address}. */
  public static void putLong(long address, long value) {
    try {
      PUT_LONG.invokeExact(address, value);
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }
}
