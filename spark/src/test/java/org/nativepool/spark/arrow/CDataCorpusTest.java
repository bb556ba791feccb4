package org.nativepool.spark.arrow;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.LargeVarCharVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;
import org.apache.arrow.vector.dictionary.Dictionary;
import org.apache.arrow.vector.dictionary.DictionaryEncoder;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.nativepool.spark.testing.RawMemory;

/**
 * Writes the Arrow Java part of the C Data seed corpus of the Go fuzz targets {@code
 * FuzzValidateImport} and {@code FuzzImportBatchAt}: batches of every layout Spark's Arrow Java
 * exports, through {@link Data#exportVectorSchemaRoot} as the plugin's {@code GoBatch} exports
 * them, read back from the C structs into the encoding of Go's {@code cdatamodel} (its {@code
 * doc.go}) and written as {@code arrowjava-<name>.bin}. The buffers' lengths, which the C structs
 * do not carry, are the vectors' own ({@code writerIndex}, as Arrow's IPC writer takes them). Runs
 * only with {@code -Dnativepool.writeCDataSeeds=<directory>} (the repository's
 * internal/cdatacheck/testdata/cdata).
 */
@EnabledIfSystemProperty(named = "nativepool.writeCDataSeeds", matches = ".+")
class CDataCorpusTest {
  private BufferAllocator allocator;

  @BeforeEach
  void open() {
    allocator = new RootAllocator();
  }

  @AfterEach
  void close() {
    allocator.close();
  }

  /** The cdatamodel encoding (Go's encoding/binary varints, zig-zag for signed). */
  private static final class Encoder {
    final ByteArrayOutputStream out = new ByteArrayOutputStream();

    void b(int v) {
      out.write(v);
    }

    void uvarint(long v) {
      while ((v & ~0x7FL) != 0) {
        out.write((int) ((v & 0x7F) | 0x80));
        v >>>= 7;
      }
      out.write((int) v);
    }

    void varint(long v) {
      uvarint((v << 1) ^ (v >> 63));
    }

    void bytes(long addr, long n) {
      for (long i = 0; i < n; i++) {
        out.write(RawMemory.getByte(addr + i));
      }
    }

    void str(long addr) {
      int n = 0;
      while (RawMemory.getByte(addr + n) != 0) {
        n++;
      }
      b(0);
      b(n);
      bytes(addr, n);
    }
  }

  private static void schema(Encoder e, long addr) {
    ArrowSchema.Snapshot s = ArrowSchema.wrap(addr).snapshot();
    int flags = (s.name != 0 ? 2 : 0) | (s.metadata != 0 ? 4 : 0) | (s.dictionary != 0 ? 8 : 0);
    e.b(0);
    e.b(flags);
    e.str(s.format);
    if (s.name != 0) {
      e.str(s.name);
    }
    if (s.metadata != 0) {
      long n = RawMemory.getInt(s.metadata);
      long size = 4;
      for (long i = 0; i < 2 * n; i++) {
        size += 4 + RawMemory.getInt(s.metadata + size);
      }
      e.b(0);
      e.uvarint(size);
      e.bytes(s.metadata, size);
    }
    e.varint(s.flags);
    e.b((int) s.n_children);
    e.varint(0);
    e.b(0);
    for (int i = 0; i < s.n_children; i++) {
      schema(e, RawMemory.getLong(s.children + 8L * i));
    }
    if (s.dictionary != 0) {
      schema(e, s.dictionary);
    }
  }

  private static void array(Encoder e, long addr, Function<long[], Long> bufLen) {
    ArrowArray.Snapshot a = ArrowArray.wrap(addr).snapshot();
    e.b(0);
    e.b(a.dictionary != 0 ? 2 : 0);
    e.varint(a.length);
    e.varint(a.null_count);
    e.varint(a.offset);
    e.b((int) a.n_buffers);
    e.varint(0);
    e.b(0);
    for (int i = 0; i < a.n_buffers; i++) {
      long p = RawMemory.getLong(a.buffers + 8L * i);
      if (p == 0) {
        e.b(1);
        e.uvarint(0);
        continue;
      }
      long n = bufLen.apply(new long[] {p, i, a.n_buffers, a.offset + a.length});
      e.b(0);
      e.uvarint(n);
      e.bytes(p, n);
    }
    e.b((int) a.n_children);
    e.varint(0);
    e.b(0);
    for (int i = 0; i < a.n_children; i++) {
      array(e, RawMemory.getLong(a.children + 8L * i), bufLen);
    }
    if (a.dictionary != 0) {
      array(e, a.dictionary, bufLen);
    }
  }

  /** Every buffer of {@code v} and its children: address → the bytes the vector wrote. */
  private static void lengths(ValueVector v, Map<Long, Long> out) {
    if (v instanceof FieldVector f) {
      for (ArrowBuf b : f.getFieldBuffers()) {
        out.put(b.memoryAddress(), b.writerIndex());
      }
      for (FieldVector c : f.getChildrenFromFields()) {
        lengths(c, out);
      }
    }
  }

  /** Exports {@code root} (and its dictionaries) and writes it as {@code arrowjava-<name>.bin}. */
  private void write(String name, VectorSchemaRoot root, DictionaryProvider dictionaries)
      throws Exception {
    Map<Long, Long> lens = new HashMap<>();
    for (FieldVector v : root.getFieldVectors()) {
      lengths(v, lens);
    }
    if (dictionaries != null) {
      for (long id : dictionaries.getDictionaryIds()) {
        lengths(dictionaries.lookup(id).getVector(), lens);
      }
    }
    try (ArrowArray arr = ArrowArray.allocateNew(allocator);
        ArrowSchema sc = ArrowSchema.allocateNew(allocator)) {
      Data.exportVectorSchemaRoot(allocator, root, dictionaries, arr, sc);
      Encoder e = new Encoder();
      schema(e, sc.memoryAddress());
      array(
          e,
          arr.memoryAddress(),
          q -> {
            Long n = lens.get(q[0]);
            if (n == null && q[1] == 0) {
              // A validity buffer the export made itself (the batch's struct around the root).
              return (q[3] + 7) / 8;
            }
            if (n == null) {
              throw new IllegalStateException(name + ": buffer " + q[1] + " of unknown length");
            }
            return n;
          });
      arr.release();
      sc.release();
      Path dir = Path.of(System.getProperty("nativepool.writeCDataSeeds"));
      Files.createDirectories(dir);
      Files.write(dir.resolve("arrowjava-" + name + ".bin"), e.out.toByteArray());
    }
    root.close();
  }

  @Test
  void writesArrowJavasExportsOfEveryLayout() throws Exception {
    int rows = 5;
    IntVector ints = new IntVector("i", allocator);
    BigIntVector longs = new BigIntVector("l", allocator);
    VarCharVector strings = new VarCharVector("s", allocator);
    VarBinaryVector binary = new VarBinaryVector("b", allocator);
    BitVector bits = new BitVector("bit", allocator);
    Float8Vector doubles = new Float8Vector("d", allocator);
    DecimalVector decimals = new DecimalVector("dec", allocator, 10, 2);
    DateDayVector dates = new DateDayVector("date", allocator);
    TimeStampMicroTZVector times = new TimeStampMicroTZVector("ts", allocator, "UTC");
    FixedSizeBinaryVector fixed = new FixedSizeBinaryVector("fsb", allocator, 3);
    LargeVarCharVector large = new LargeVarCharVector("ls", allocator);
    for (ValueVector v : List.of(ints, longs, strings, binary, bits, doubles, decimals, dates, times, fixed, large)) {
      v.allocateNew();
    }
    for (int i = 0; i < rows; i++) {
      if (i == 1) {
        continue; // a null in every column: its validity bit left unset
      }
      ints.setSafe(i, i * 7);
      longs.setSafe(i, 1L << (8 * i));
      strings.setSafe(i, ("row-" + i + (i == 3 ? " a longer string" : "")).getBytes(StandardCharsets.UTF_8));
      binary.setSafe(i, new byte[] {(byte) i, 0, (byte) 0xff});
      bits.setSafe(i, i % 2);
      doubles.setSafe(i, i * 1.5);
      decimals.setSafe(i, java.math.BigDecimal.valueOf(125 * i, 2));
      dates.setSafe(i, 19000 + i);
      times.setSafe(i, 1_700_000_000_000_000L + i);
      fixed.setSafe(i, new byte[] {'a', 'b', (byte) ('0' + i)});
      large.setSafe(i, ("large-" + i).getBytes(StandardCharsets.UTF_8));
    }
    List<FieldVector> primitives = new ArrayList<>(List.of(ints, longs, strings, binary, bits, doubles, decimals, dates, times, fixed, large));
    for (FieldVector v : primitives) {
      v.setValueCount(rows);
    }
    write("primitives", new VectorSchemaRoot(primitives), null);

    ListVector list = ListVector.empty("list", allocator);
    UnionListWriter w = list.getWriter();
    for (int i = 0; i < rows; i++) {
      w.setPosition(i);
      if (i == 2) {
        continue; // null
      }
      w.startList();
      for (int j = 0; j < i; j++) {
        w.writeInt(i * 10 + j);
      }
      w.endList();
    }
    list.setValueCount(rows);
    write("list", new VectorSchemaRoot(List.<FieldVector>of(list)), null);

    StructVector struct = StructVector.empty("struct", allocator);
    IntVector a = struct.addOrGet("a", FieldType.nullable(new ArrowType.Int(32, true)), IntVector.class);
    VarCharVector bv = struct.addOrGet("b", FieldType.nullable(new ArrowType.Utf8()), VarCharVector.class);
    for (int i = 0; i < rows; i++) {
      if (i == 4) {
        struct.setNull(i);
        continue;
      }
      struct.setIndexDefined(i);
      a.setSafe(i, i);
      bv.setSafe(i, ("s" + i).getBytes(StandardCharsets.UTF_8));
    }
    a.setValueCount(rows);
    bv.setValueCount(rows);
    struct.setValueCount(rows);
    write("struct", new VectorSchemaRoot(List.<FieldVector>of(struct)), null);

    VarCharVector words = new VarCharVector("words", allocator);
    words.allocateNew();
    VarCharVector dictValues = new VarCharVector("dict", allocator);
    dictValues.allocateNew();
    String[] dict = {"alpha", "beta", "gamma"};
    for (int i = 0; i < dict.length; i++) {
      dictValues.setSafe(i, dict[i].getBytes(StandardCharsets.UTF_8));
    }
    dictValues.setValueCount(dict.length);
    for (int i = 0; i < rows; i++) {
      if (i != 3) {
        words.setSafe(i, dict[i % dict.length].getBytes(StandardCharsets.UTF_8));
      }
    }
    words.setValueCount(rows);
    Dictionary dictionary = new Dictionary(dictValues, new DictionaryEncoding(1L, false, null));
    FieldVector encoded = (FieldVector) DictionaryEncoder.encode(words, dictionary);
    words.close();
    DictionaryProvider.MapDictionaryProvider provider = new DictionaryProvider.MapDictionaryProvider(dictionary);
    write("dictionary", new VectorSchemaRoot(List.of(encoded)), provider);
    dictValues.close();

    write("empty", new VectorSchemaRoot(List.<FieldVector>of(new IntVector("none", allocator))), null);
  }
}
