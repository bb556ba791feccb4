package org.nativepool.spark.ledger;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;

/**
 * A JVM of its own for {@code LedgerPartsTest}: prints its heap's resident bytes as {@link
 * HeapResidency} finds them, and its committed heap, on one line.
 */
public final class HeapResidencyProbe {
  private HeapResidencyProbe() {}

  /** Touches some heap, then prints "resident committed". */
  public static void main(String[] args) {
    byte[][] touched = new byte[16][];
    for (int i = 0; i < touched.length; i++) {
      touched[i] = new byte[1 << 20];
    }
    MemoryUsage h = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
    long resident = new HeapResidency().residentNow(h.getMax(), h.getCommitted());
    System.out.println(resident + " " + h.getCommitted() + " " + touched.length);
  }
}
