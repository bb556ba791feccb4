package org.nativepool.spark.jni;

import org.nativepool.spark.config.Bytes;



/**
 * The Arrow figures of one reservation's Go allocator ({@code arrowStats0}, {@link ArrowStats});
 * the ordinal is the index. The declaration is the Go table {@code arrowStatFields} in {@code
 * internal/bridge/arrow_stats.go}; the Go test {@code TestStatTablesMatchJavaEnums} checks these
 * constants, in order, against it. Add a figure there first.
 */
public enum ArrowStat {
  /** Bytes in live buffers the Go allocator made (Go-charged). */
  ALLOCATED,
  /**
   * The size of the Go reservation that pays for the Arrow allocator (a sibling of the
   * reservation, of the same consumer) once the allocator exists; before, the reservation's own.
   */
  RESERVED,
  /** Bytes charged past a refusal (imports that existed), cumulative. */
  FORCED,
  /** Live buffers the Go allocator made. */
  LIVE_BUFFERS,
  /** Bytes imported from Java that Go holds: tracked, charged to Java's allocator, not here. */
  IMPORTED,
  /** Imported batches Go holds. */
  IMPORTS_LIVE,
  /** Bytes exported to Java and not yet released by Java. */
  EXPORTED,
  /** Exported batches Java has not released. */
  EXPORTS_LIVE,
  /** The highest {@link #ALLOCATED} so far. */
  PEAK,
  /** Allocations the pool refused, cumulative. */
  REFUSALS,
  /** Batch handles of the reservation not yet released. */
  BATCHES,
  /** 1 once the allocator is closed (explicitly, or with its reservation or task), else 0. */
  CLOSED;
}
