package org.nativepool.spark.ledger;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedObject;
import jdk.jfr.consumer.RecordedStackTrace;
import org.nativepool.spark.config.Bytes;
import org.nativepool.spark.events.HeapHolder;

/**
 * Turns the {@code jdk.OldObjectSample} events of one dump into the heap's largest holders ({@link
 * HeapHolder}): a pure function of the events, so that every rule can be tested on a real dump.
 *
 * <ul>
 *   <li>A sample counts if it was allocated at or after {@code since} (samples allocated before the
 *       growth began are not blamed) and the path search reached it from a GC root. A sample the
 *       search did not reach is garbage not yet collected, unless the search ran out of time
 *       ({@link #ranOut}): then it is kept, without a path, since nothing says it is dead.
 *   <li>Samples of the same type held along the same path, array indices left out, are one holder;
 *       holders are ranked by their samples' sizes added up (by their count where the JVM gives no
 *       size), largest first.
 *   <li>Only types, field names, the classes declaring them, array links, collection sizes and the
 *       root's kind are read. Of the JVM's descriptions of objects only a class's name (the object
 *       is a {@code java.lang.Class}, whose static field holds the next link) and a collection's
 *       size are kept; a thread's name and every other description are left out.
 * </ul>
 *
 * <p>Stateless.
 */
final class HeapHolderAnalysis {
  /** The event's name. */
  static final String EVENT = "jdk.OldObjectSample";

  private static final int STATIC = 0x0008;
  private static final Pattern SIZE = Pattern.compile("Size: \\d+");
  private static final String CLASS_NAME = "Class Name: ";

  private HeapHolderAnalysis() {}

  /**
   * What one dump held.
   *
   * @param holders the largest holders, largest first
   * @param samples the samples the dump had
   * @param recent of those, allocated at or after {@code since}
   * @param live of those, reached from a GC root (one kept without a path when the search ran out
   *     does not count)
   * @param searchMillis how long the path search took (the events' duration), ms
   * @param ranOut whether the search stopped at its time bound
   * @param liveBytes the live samples' sizes added up (those the JVM gives)
   */
  record Outcome(
      List<HeapHolder> holders,
      int samples,
      int recent,
      int live,
      long searchMillis,
      boolean ranOut,
      long liveBytes) {}

  /**
   * The {@code top} largest holders among {@code events} (other events are ignored), samples
   * allocated before {@code sinceMillis} left out; {@code cutoffMillis} is the search's bound.
   */
  static Outcome analyze(List<RecordedEvent> events, long sinceMillis, int top, long cutoffMillis) {
    List<RecordedEvent> samples = new ArrayList<>();
    long searchNanos = 0;
    for (RecordedEvent e : events) {
      if (e.getEventType().getName().equals(EVENT)) {
        samples.add(e);
        searchNanos = Math.max(searchNanos, e.getDuration().toNanos());
      }
    }
    long searchMillis = searchNanos / 1_000_000;
    // The JVM writes the samples it could not reach without a root; if the search took its whole
    // bound, those may be live objects it had no time for.
    boolean ranOut = searchMillis >= cutoffMillis;
    Map<String, Group> groups = new LinkedHashMap<>();
    int recent = 0;
    int live = 0;
    long liveBytes = 0;
    for (RecordedEvent e : samples) {
      long allocated = e.getInstant("allocationTime").toEpochMilli();
      if (allocated < sinceMillis) {
        continue;
      }
      recent++;
      RecordedObject root = e.getValue("root");
      RecordedObject object = e.getValue("object");
      String type = object == null ? "?" : typeName(object.getValue("type"));
      int length = e.getInt("arrayElements");
      long size = size(e, type, length);
      if (object == null || (root == null && !ranOut)) {
        continue;
      }
      if (root != null) { // reached: live for sure (one not reached in time may be garbage)
        live++;
        liveBytes += Math.max(0, size);
      }
      List<String> chain = root == null ? List.of() : chain(object);
      String rootKind = root == null ? null : rootKind(root);
      String key = type + "\n" + String.join("\n", chain) + "\n" + rootKind;
      Group g = groups.computeIfAbsent(key, k -> new Group(type, chain, rootKind));
      g.add(allocated, size, type.endsWith("[]") ? length : -1, frames(e.getStackTrace()));
    }
    List<Group> ranked = new ArrayList<>(groups.values());
    ranked.sort(
        Comparator.comparingLong((Group g) -> g.sizeKnown ? g.bytes : 0)
            .thenComparingInt(g -> g.samples)
            .reversed());
    List<HeapHolder> out = new ArrayList<>();
    for (Group g : ranked.subList(0, Math.min(top, ranked.size()))) {
      out.add(g.holder());
    }
    return new Outcome(out, samples.size(), recent, live, searchMillis, ranOut, liveBytes);
  }

  /**
   * The note of an outcome, e.g. {@code 231 samples kept by the JVM, 40 allocated since 04:06:29
   * UTC, 38 of them live (12.0 MiB sampled); path search 45 ms (bound 1000 ms)}, with {@code ,
   * ran out: samples it did not reach are shown without a path} when it did.
   */
  static String note(Outcome o, String since, long cutoffMillis) {
    StringBuilder b =
        new StringBuilder()
            .append(o.samples())
            .append(" samples kept by the JVM, ")
            .append(o.recent())
            .append(since == null ? " in all" : " allocated since " + since)
            .append(", ")
            .append(o.live())
            .append(" of them live (")
            .append(Bytes.format(o.liveBytes()))
            .append(" sampled); path search ")
            .append(o.searchMillis())
            .append(" ms (bound ")
            .append(cutoffMillis)
            .append(" ms)");
    if (o.ranOut()) {
      b.append(", ran out: samples it did not reach are shown without a path");
    }
    return b.toString();
  }

  /** The chain from {@code object} up to what the root references, one link each. */
  static List<String> chain(RecordedObject object) {
    List<String> links = new ArrayList<>();
    RecordedObject o = object;
    int guard = 0;
    while (o != null && guard++ < 1000) {
      RecordedObject ref = o.getValue("referrer");
      if (ref == null) {
        break;
      }
      RecordedObject holder = ref.getValue("object");
      RecordedObject field = ref.getValue("field");
      RecordedObject array = ref.getValue("array");
      String holderType = holder == null ? "?" : typeName(holder.getValue("type"));
      if (field != null) {
        String name = field.getString("name");
        int modifiers = field.getInt("modifiers");
        String declaring = holderType;
        String d = holder == null ? null : holder.getString("description");
        if (holderType.equals("java.lang.Class") && d != null && d.startsWith(CLASS_NAME)) {
          declaring = d.substring(CLASS_NAME.length()).trim(); // a static field of that class
        }
        links.add(((modifiers & STATIC) != 0 ? "static " : "") + declaring + "." + name);
      } else if (array != null) {
        links.add(holderType + " element");
      } else {
        links.add(holderType);
      }
      String d = holder == null ? null : holder.getString("description");
      if (d != null && SIZE.matcher(d).matches() && !holderType.equals("java.lang.Class")) {
        int last = links.size() - 1;
        links.set(last, links.get(last) + " (" + d.toLowerCase(Locale.ROOT) + ")");
      }
      int skip = ref.getInt("skip");
      if (skip > 0) {
        links.add("… " + skip + " more links …");
      }
      o = holder;
    }
    if (links.size() > HeapHolder.CHAIN_KEPT) {
      int head = HeapHolder.CHAIN_KEPT / 2;
      int tail = HeapHolder.CHAIN_KEPT - head - 1;
      List<String> cut = new ArrayList<>(links.subList(0, head));
      cut.add("… " + (links.size() - head - tail) + " more links …");
      cut.addAll(links.subList(links.size() - tail, links.size()));
      links = cut;
    }
    return links;
  }

  /** The root's kind, e.g. {@code Threads / Stack Variable}; never its description. */
  static String rootKind(RecordedObject root) {
    String system = root.getString("system");
    String type = root.getString("type");
    if (system == null && type == null) {
      return "unknown";
    }
    if (type == null || type.isEmpty() || type.equals(system)) {
      return String.valueOf(system);
    }
    return system == null ? type : system + " / " + type;
  }

  /** The top {@value HeapHolder#FRAMES_KEPT} frames as {@code Class.method:line}. */
  static List<String> frames(RecordedStackTrace stack) {
    List<String> out = new ArrayList<>();
    if (stack == null) {
      return out;
    }
    for (RecordedFrame f : stack.getFrames()) {
      if (out.size() == HeapHolder.FRAMES_KEPT) {
        break;
      }
      RecordedMethod m = f.getMethod();
      if (m == null) {
        continue;
      }
      String cls = m.getType() == null ? "?" : m.getType().getName();
      int line = f.getLineNumber();
      out.add(cls + "." + m.getName() + (line > 0 ? ":" + line : ""));
    }
    return out;
  }

  /** A class's name as Java writes it: arrays as {@code long[]}, {@code java.lang.Object[]}. */
  static String typeName(RecordedClass c) {
    if (c == null) {
      return "?";
    }
    return javaName(c.getName());
  }

  /** A binary or descriptor name as Java writes it: {@code [J} → {@code long[]}. */
  static String javaName(String name) {
    if (name == null || !name.startsWith("[")) {
      return name == null ? "?" : name;
    }
    int dims = 0;
    while (dims < name.length() && name.charAt(dims) == '[') {
      dims++;
    }
    String elem = name.substring(dims);
    String base =
        switch (elem) {
          case "Z" -> "boolean";
          case "B" -> "byte";
          case "C" -> "char";
          case "S" -> "short";
          case "I" -> "int";
          case "J" -> "long";
          case "F" -> "float";
          case "D" -> "double";
          default -> elem.startsWith("L") && elem.endsWith(";")
              ? elem.substring(1, elem.length() - 1)
              : elem;
        };
    return base + "[]".repeat(dims);
  }

  /**
   * A sample's size: the event's {@code objectSize} (JDK 18 and later); else, for an array, its
   * header and elements (16 bytes and 4-byte references, as with compressed oops, rounded to 8);
   * else -1.
   */
  static long size(RecordedEvent e, String type, int length) {
    if (e.hasField("objectSize")) {
      return e.getLong("objectSize");
    }
    if (!type.endsWith("[]") || length < 0) {
      return -1;
    }
    String elem = type.substring(0, type.length() - 2);
    int each =
        switch (elem) {
          case "boolean", "byte" -> 1;
          case "char", "short" -> 2;
          case "int", "float" -> 4;
          case "long", "double" -> 8;
          default -> 4;
        };
    long raw = 16 + (long) length * each;
    return (raw + 7) & ~7L;
  }

  /** Samples of one type along one path. */
  private static final class Group {
    final String type;
    final List<String> chain;
    final String root;
    int samples;
    long bytes;
    boolean sizeKnown = true;
    long first = Long.MAX_VALUE;
    long last = Long.MIN_VALUE;
    int maxLength = -1;
    long largest = -1;
    List<String> frames = List.of();

    Group(String type, List<String> chain, String root) {
      this.type = type;
      this.chain = chain;
      this.root = root;
    }

    void add(long allocated, long size, int length, List<String> f) {
      samples++;
      if (size < 0) {
        sizeKnown = false;
      } else {
        bytes += size;
      }
      first = Math.min(first, allocated);
      last = Math.max(last, allocated);
      maxLength = Math.max(maxLength, length);
      if (size > largest || frames.isEmpty()) {
        largest = Math.max(largest, size);
        frames = f;
      }
    }

    HeapHolder holder() {
      return new HeapHolder(
          type, maxLength, samples, sizeKnown ? bytes : -1, first, last, frames, chain, root);
    }
  }
}
