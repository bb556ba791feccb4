package org.nativepool.spark.testing;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;

/**
 * Reads bytes, ints and longs and writes longs at a raw address, for tests that inspect or forge C
 * Data Interface structs. Arrow's {@code MemoryUtil} cannot serve every Spark line: Arrow 12 (Spark
 * 3.5) has no {@code getByte}, {@code getInt} or {@code getLong} and Arrow 15 on made its {@code
 * UNSAFE} private. This takes the JDK's {@code sun.misc.Unsafe} by reflection (no compile-time
 * reference to an internal API).
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
      GET_BYTE = method(unsafe, "getByte", byte.class, long.class);
      GET_INT = method(unsafe, "getInt", int.class, long.class);
      GET_LONG = method(unsafe, "getLong", long.class, long.class);
      PUT_LONG = method(unsafe, "putLong", void.class, long.class, long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private RawMemory() {}

  /** {@code unsafe}'s public method {@code name}, bound to it. */
  private static MethodHandle method(Object unsafe, String name, Class<?> ret, Class<?>... params)
      throws ReflectiveOperationException {
    return MethodHandles.publicLookup()
        .findVirtual(unsafe.getClass(), name, MethodType.methodType(ret, params))
        .bindTo(unsafe);
  }

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
