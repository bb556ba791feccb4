package org.nativepool.spark.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.nativepool.spark.config.Bytes;

/**
 * One holder of a JVM's heap: live objects of one type, held along one path from a GC root, as the
 * JDK Flight Recorder's Old Object Samples found them (a bounded, size-weighted sample of the live
 * objects, each with its allocation stack and, at the dump, its reference chain to a GC root).
 * Samples of the same type held along the same path (array indices left out) make one holder.
 *
 * <p>It names types, fields, sizes, times and code, never a value an object holds: the chain is
 * made of field names and the classes that declare them, array element links and collection sizes;
 * the root is its kind (e.g. {@code Threads / Stack Variable}, {@code Class Loader Data}).
 *
 * <p>Immutable; Java-serialisable for plugin RPC, Jackson-readable for the event log.
 */
public final class HeapHolder implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Frames of the allocation stack a holder keeps, innermost first. */
  public static final int FRAMES_KEPT = 5;

  /** Links of the chain a holder keeps; a longer chain keeps its ends and says how many it left. */
  public static final int CHAIN_KEPT = 16;

  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("HH:mm:ss", Locale.ROOT).withZone(ZoneOffset.UTC);

  private final String type;
  private final int arrayLength;
  private final int samples;
  private final long bytes;
  private final long firstAllocatedMillis;
  private final long lastAllocatedMillis;
  private final List<String> frames;
  private final List<String> chain;
  private final String root;

  /**
   * One holder; Jackson's creator when the event log is replayed.
   *
   * @param type the objects' type, arrays as {@code long[]} or {@code java.lang.Object[]}
   * @param arrayLength the length of the largest sampled array; -1 for objects that are not arrays
   * @param samples how many of the JVM's samples it holds
   * @param bytes the sampled objects' sizes added up (shallow sizes); -1 if the JVM does not say
   *     (objects that are not arrays, before JDK 18)
   * @param firstAllocatedMillis when the oldest of them was allocated (epoch ms)
   * @param lastAllocatedMillis when the newest was
   * @param frames the allocation stack of the largest, innermost first, {@code Class.method:line}
   * @param chain the path from the objects up to what a GC root references, one link each, e.g.
   *     {@code Probe$Chunk.data}, {@code java.lang.Object[] element}, {@code static Probe.LEAK};
   *     empty when no path was found
   * @param root the GC root's kind, e.g. {@code Threads / Stack Variable}; null when no path was
   *     found (the path search stopped at its time bound first)
   */
  @JsonCreator
  public HeapHolder(
      @JsonProperty("type") String type,
      @JsonProperty("arrayLength") int arrayLength,
      @JsonProperty("samples") int samples,
      @JsonProperty("bytes") long bytes,
      @JsonProperty("firstAllocatedMillis") long firstAllocatedMillis,
      @JsonProperty("lastAllocatedMillis") long lastAllocatedMillis,
      @JsonProperty("frames") List<String> frames,
      @JsonProperty("chain") List<String> chain,
      @JsonProperty("root") String root) {
    this.type = type == null ? "?" : type;
    this.arrayLength = arrayLength;
    this.samples = samples;
    this.bytes = bytes;
    this.firstAllocatedMillis = firstAllocatedMillis;
    this.lastAllocatedMillis = lastAllocatedMillis;
    this.frames = frames == null ? List.of() : List.copyOf(frames);
    this.chain = chain == null ? List.of() : List.copyOf(chain);
    this.root = root;
  }

  /** The objects' type, arrays as {@code long[]}. */
  public String getType() {
    return type;
  }

  /** The length of the largest sampled array; -1 for objects that are not arrays. */
  public int getArrayLength() {
    return arrayLength;
  }

  /** How many of the JVM's samples it holds. */
  public int getSamples() {
    return samples;
  }

  /** The sampled objects' shallow sizes added up; -1 if the JVM does not say. */
  public long getBytes() {
    return bytes;
  }

  /** When the oldest of its samples was allocated (epoch ms). */
  public long getFirstAllocatedMillis() {
    return firstAllocatedMillis;
  }

  /** When the newest was allocated (epoch ms). */
  public long getLastAllocatedMillis() {
    return lastAllocatedMillis;
  }

  /** The allocation stack of the largest sample, innermost first. */
  public List<String> getFrames() {
    return frames;
  }

  /** The path from the objects up to what the GC root references; empty when none was found. */
  public List<String> getChain() {
    return chain;
  }

  /** The GC root's kind; null when no path was found. */
  public String getRoot() {
    return root;
  }

  /** The type with the largest array's length, e.g. {@code long[16384]}. */
  public String typeAndLength() {
    if (arrayLength >= 0 && type.endsWith("[]")) {
      return type.substring(0, type.length() - 1) + arrayLength + "]";
    }
    return type;
  }

  /**
   * The path in one line, from the objects to the root, e.g. {@code Probe$Chunk.data ←
   * java.lang.Object[] element ← java.util.ArrayList.elementData ← static Probe.LEAK ← root
   * Threads / Stack Variable}; {@code no path found} without one.
   */
  public String path() {
    if (root == null) {
      return "no path to a GC root found";
    }
    StringBuilder b = new StringBuilder();
    for (String link : chain) {
      b.append(link).append(" ← ");
    }
    return b.append("root ").append(root).toString();
  }

  /**
   * The holder in one line, e.g. {@code 12 × long[16384] (1.5 MiB sampled), allocated 04:06:29 to
   * 04:06:31 UTC at Probe$Chunk.<init>:8 < Probe.main:17, held by Probe$Chunk.data ← … ← root
   * Threads / Stack Variable}.
   */
  public String describe() {
    StringBuilder b = new StringBuilder();
    b.append(samples).append(" × ").append(typeAndLength());
    if (bytes >= 0) {
      b.append(" (").append(Bytes.format(bytes)).append(" sampled)");
    }
    b.append(", allocated ").append(TIME.format(Instant.ofEpochMilli(firstAllocatedMillis)));
    if (lastAllocatedMillis / 1000 != firstAllocatedMillis / 1000) {
      b.append(" to ").append(TIME.format(Instant.ofEpochMilli(lastAllocatedMillis)));
    }
    b.append(" UTC");
    if (!frames.isEmpty()) {
      b.append(" at ").append(String.join(" < ", frames.subList(0, Math.min(3, frames.size()))));
    }
    return b.append(", held by ").append(path()).toString();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof HeapHolder h
        && type.equals(h.type)
        && arrayLength == h.arrayLength
        && samples == h.samples
        && bytes == h.bytes
        && firstAllocatedMillis == h.firstAllocatedMillis
        && lastAllocatedMillis == h.lastAllocatedMillis
        && frames.equals(h.frames)
        && chain.equals(h.chain)
        && Objects.equals(root, h.root);
  }

  @Override
  public int hashCode() {
    return Objects.hash(type, samples, bytes, chain, root);
  }

  @Override
  public String toString() {
    return "HeapHolder(" + describe() + ")";
  }
}
