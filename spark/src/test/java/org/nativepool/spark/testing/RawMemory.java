package org.nativepool.spark.testing;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;

/**
 * Reads bytes, ints and longs and writes longs at a raw address, for tests that inspect or forge C
 * Data Interface structs. Arrow's {@code MemoryUtil} cannot serve every Spark line: Arrow 12 (Spark
 * 3.5) has no {@code getByte}, {@code getInt} or {@code getLong} and Arrow 15 on made its {@code
 * UNSAFE} private. This takes the JDK's
 * {@code sun.misc.Unsafe} by reflection (no compile-time reference to an internal API).
 */
public final class RawMemory {
  private static final MethodHandle GET_BYTE;
  private static final MethodHandle GET_INT;
  private static final MethodHandle GET_LONG;
  private static final MethodHandle PUT_LONG;

  static {
    try {
      Class<?> c = Class.forName("sun.misc.Unsafe");
      Field f = c.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      Object unsafe = f.get(null);
      MethodHandles.Lookup l = MethodHandles.publicLookup();
      GET_BYTE =
          l.findVirtual(c, "getByte", MethodType.methodType(byte.class, long.class)).bindTo(unsafe);
      GET_INT =
          l.findVirtual(c, "getInt", MethodType.methodType(int.class, long.class)).bindTo(unsafe);
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

  /** The byte at {@code address}. */
  public static byte getByte(long address) {
    try {
      return (byte) GET_BYTE.invokeExact(address);
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  /** The int at {@code address}, in the platform's byte order. */
  public static int getInt(long address) {
    try {
      return (int) GET_INT.invokeExact(address);
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

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
