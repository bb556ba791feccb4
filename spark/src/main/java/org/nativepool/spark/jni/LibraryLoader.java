package org.nativepool.spark.jni;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads {@code libnativepool.so} once per JVM, checks its version against the jar's, and
 * initialises it ({@code init0}).
 *
 * <p>Where the library comes from, first match wins:
 *
 * <ol>
 *   <li>the path passed to the first {@link #ensureLoaded(String)} that names one (the plugin
 *       passes {@code spark.nativepool.library}); a Go engine's own c-shared library (which links
 *       nativepool in) is named this way;
 *   <li>the copy the jar carries for this platform, {@value #RESOURCE_DIR}{@code
 *       /<os>-<arch>/libnativepool.so} (linux-x86_64, and linux-aarch64 when built): extracted to a
 *       new directory of this process under {@code java.io.tmpdir}, deleted when the JVM exits;
 *   <li>{@code System.loadLibrary("nativepool")}, i.e. {@code java.library.path}, only when the jar
 *       carries no library for this platform.
 * </ol>
 *
 * <p>Whatever the source, the library must report the jar's version ({@code
 * version0()} against {@value #RESOURCE_DIR}{@code /version.properties}) before
 * {@code init0} runs; a mismatch is a load failure.
 *
 * <p>Only one Go runtime may live in a process, so the library is loaded exactly once, by a static
 * holder, and the outcome (success or failure) is kept: a later caller asking for another path gets
 * the library already loaded and a warning in the log, and after a failure every caller gets the
 * same {@link IllegalStateException}, whose message names the path tried and the reason. Safe for
 * concurrent use.
 */
public final class LibraryLoader {

  /** The library name for {@code System.loadLibrary}. */
  public static final String LIBRARY_NAME = "nativepool";

  /** The jar's resource directory holding the libraries and the version stamp. */
  public static final String RESOURCE_DIR = "org/nativepool/native";

  private static final Logger LOG = LoggerFactory.getLogger(LibraryLoader.class);

  /** A path offered before the holder ran; read once by the holder's initialiser. */
  private static final AtomicReference<Offer> OFFERED = new AtomicReference<>();

  private LibraryLoader() {}

  /** The nativepool release the library is built from; needs no {@code init0}. */
  static native String version0();

  /** Caches the JavaVM, classes and method IDs; idempotent. */
  static native void init0();

  /**
   * Loads and initialises the library unless this JVM already has, preferring {@code path} when it
   * is the first load; {@code path} is named as coming from {@code spark.nativepool.library}.
   *
   * @param path an explicit library file, or null to use the jar's copy (or {@code
   *     java.library.path})
   * @return a description of where the library was loaded from
   * @throws IllegalStateException if loading, the version check or initialising failed (now or on
   *     the first attempt); the message names the path tried and the reason, the original error is
   *     the cause
   */
  public static String ensureLoaded(String path) {
    return ensureLoaded(path, "spark.nativepool.library");
  }

  /**
   * {@link #ensureLoaded(String)} for a path that came from {@code origin} (a setting's name, as
   * messages about it say where the path came from).
   */
  public static String ensureLoaded(String path, String origin) {
    if (path != null && !path.isEmpty()) {
      OFFERED.compareAndSet(null, new Offer(path, origin));
    }
    Outcome outcome = Holder.OUTCOME;
    if (outcome.failure != null) {
      throw new IllegalStateException(failureMessage(outcome), outcome.failure);
    }
    if (path != null && !path.isEmpty() && !sameFile(path, outcome.file)) {
      LOG.warn(
          "nativepool: library already loaded from {}; ignoring the request to load {}",
          outcome.source,
          path);
    }
    return outcome.source;
  }

  /** A path offered before the holder ran, and where it came from. */
  private record Offer(String path, String origin) {}

  /** Whether the library has been loaded and initialised successfully. */
  public static boolean isLoaded() {
    return Holder.OUTCOME.failure == null;
  }

  /**
   * This JVM's platform as the jar names its resource directories: {@code <os>-<arch>}, e.g.
   * {@code linux-x86_64}, {@code linux-aarch64}.
   */
  public static String platform() {
    String os = System.getProperty("os.name", "unknown").toLowerCase(Locale.ROOT);
    if (os.startsWith("linux")) {
      os = "linux";
    } else if (os.startsWith("mac")) {
      os = "darwin";
    } else {
      os = os.replace(' ', '_');
    }
    String arch = System.getProperty("os.arch", "unknown").toLowerCase(Locale.ROOT);
    switch (arch) {
      case "amd64":
      case "x86_64":
        arch = "x86_64";
        break;
      case "aarch64":
      case "arm64":
        arch = "aarch64";
        break;
      default:
        break;
    }
    return os + "-" + arch;
  }

  /** The jar's library for this platform, or null. */
  public static URL bundledLibrary() {
    return LibraryLoader.class.getClassLoader()
        .getResource(RESOURCE_DIR + "/" + platform() + "/" + System.mapLibraryName(LIBRARY_NAME));
  }

  /**
   * The nativepool release this jar is, as its stamp says ({@value #RESOURCE_DIR}{@code
   * /version.properties}), for the startup line; {@code "?"} when the stamp cannot be read.
   */
  public static String release() {
    try {
      return jarVersion();
    } catch (IOException e) {
      return "?";
    }
  }

  /**
   * The version the jar is stamped with ({@value #RESOURCE_DIR}{@code /version.properties}).
   *
   * @throws IOException if the stamp is missing or unreadable
   */
  static String jarVersion() throws IOException {
    String name = RESOURCE_DIR + "/version.properties";
    try (InputStream in = LibraryLoader.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) {
        throw new IOException("the plugin jar has no " + name);
      }
      Properties p = new Properties();
      p.load(in);
      String v = p.getProperty("version");
      if (v == null || v.isEmpty() || v.startsWith("${")) {
        throw new IOException(name + " has no version (built without Maven's filtering?)");
      }
      return v;
    }
  }

  private static String failureMessage(Outcome outcome) {
    Throwable f = outcome.failure;
    String reason = f.getMessage() == null ? f.getClass().getName() : f.getMessage();
    if (f instanceof UnsatisfiedLinkError) {
      reason = "UnsatisfiedLinkError: " + reason;
    }
    return "nativepool: native library not loaded from " + outcome.source + ": " + reason;
  }

  private static boolean sameFile(String path, File loaded) {
    if (loaded == null) {
      return false;
    }
    try {
      return new File(path).getCanonicalFile().equals(loaded.getCanonicalFile());
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * Copies the jar's library into a new directory of this process under {@code java.io.tmpdir};
   * both are deleted when the JVM exits (on Linux a loaded library stays mapped after its file is
   * deleted).
   */
  private static File extract(URL url) throws IOException {
    Path dir =
        Files.createTempDirectory("nativepool-" + ProcessHandle.current().pid() + "-");
    dir.toFile().deleteOnExit();
    Path file = dir.resolve(System.mapLibraryName(LIBRARY_NAME));
    file.toFile().deleteOnExit(); // registered after the directory, so deleted before it
    try (InputStream in = url.openStream()) {
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
    }
    return file.toFile();
  }

  /** The result of the single load attempt of this JVM. */
  private static final class Outcome {
    /** Where the library was (to be) loaded from, for messages. */
    final String source;
    /** The file loaded by path, or null when System.loadLibrary resolved it. */
    final File file;
    /** Null on success, else what went wrong. */
    final Throwable failure;

    Outcome(String source, File file, Throwable failure) {
      this.source = source;
      this.file = file;
      this.failure = failure;
    }
  }

  /** Initialised on first use: the JVM runs {@link #load()} exactly once. */
  private static final class Holder {
    static final Outcome OUTCOME = load();

    private static Outcome load() {
      Offer offered = OFFERED.get();
      File file = null;
      String source;
      URL bundled = null;
      if (offered != null) {
        file = new File(offered.path()).getAbsoluteFile();
        source = file + " (" + offered.origin() + ")";
      } else if ((bundled = bundledLibrary()) != null) {
        source = bundled + " (the plugin jar's " + platform() + " library)";
      } else {
        source =
            System.mapLibraryName(LIBRARY_NAME)
                + " on java.library.path="
                + System.getProperty("java.library.path")
                + " (the plugin jar carries no "
                + platform()
                + " library)";
      }
      try {
        String expected = jarVersion();
        if (bundled != null) {
          file = extract(bundled);
          source = file + " extracted from " + source;
        }
        if (file != null) {
          System.load(file.getPath());
        } else {
          System.loadLibrary(LIBRARY_NAME);
        }
        String actual;
        try {
          actual = version0();
        } catch (UnsatisfiedLinkError e) {
          throw new IOException(
              "the library has no LibraryLoader.version0 (built from a nativepool older than the"
                  + " jar's "
                  + expected
                  + "?)",
              e);
        }
        if (!expected.equals(actual)) {
          throw new IOException(
              "version mismatch: the library is nativepool "
                  + actual
                  + ", the plugin jar is "
                  + expected);
        }
        init0();
      } catch (IOException | RuntimeException | LinkageError e) {
        return new Outcome(source, file, e);
      }
      LOG.info("nativepool: loaded {}", source);
      return new Outcome(source, file, null);
    }
  }
}
