package org.nativepool.spark.ledger;

import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * How many bytes of an address range of this process are resident (or swapped), read from {@code
 * /proc/self/pagemap}: one 8-byte entry per page, whose bit 63 says the page is present and bit 62
 * that it is swapped. Memory allocated but never touched is not resident, and a ledger part that
 * counts allocated bytes would make the unexplained remainder negative by the untouched part: the
 * ledger uses this where it knows the address of memory allocated whole and used piecemeal, netty's
 * direct chunks (allocated without a cleaner: a {@code malloc} of 4 MiB or more, which glibc maps
 * and the kernel backs page by page as netty hands out runs of the chunk).
 *
 * <p>Reading the entries of a 4 MiB range reads 8 KiB; the present bit needs no privilege. Returns
 * -1 when pagemap cannot be read (not Linux), and the caller keeps its allocated figure. Stateless.
 */
final class PageResidency {
  private static final String PAGEMAP = "/proc/self/pagemap";

  /** The page size, from {@code sun.misc.Unsafe} (4 KiB where it cannot be read). */
  static final long PAGE = pageSize();

  private PageResidency() {}

  /**
   * The resident and swapped bytes of {@code [address, address + length)}, whole pages counted, or
   * -1 if pagemap cannot be read.
   */
  static long of(long address, long length) {
    if (address <= 0 || length <= 0) {
      return 0;
    }
    long first = address / PAGE;
    long last = (address + length - 1) / PAGE;
    long pages = last - first + 1;
    try (FileChannel ch = FileChannel.open(Path.of(PAGEMAP), StandardOpenOption.READ)) {
      ByteBuffer b =
          ByteBuffer.allocate((int) Math.min(pages, 8192) * 8).order(ByteOrder.nativeOrder());
      long resident = 0;
      long page = first;
      while (page <= last) {
        b.clear();
        b.limit((int) Math.min(last - page + 1, 8192) * 8);
        int n = ch.read(b, page * 8);
        if (n <= 0) {
          return -1;
        }
        b.flip();
        while (b.remaining() >= 8) {
          long e = b.getLong();
          if ((e & (3L << 62)) != 0) {
            resident++;
          }
          page++;
        }
      }
      return resident * PAGE;
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  private static long pageSize() {
    try {
      Class<?> c = Class.forName("sun.misc.Unsafe");
      Field f = c.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      return ((Number) c.getMethod("pageSize").invoke(f.get(null))).longValue();
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return 4096;
    }
  }
}
