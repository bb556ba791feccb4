package org.nativepool.spark;

import java.io.File;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads {@code libnativepool.so} once per JVM and initialises it ({@link NativeBridge#init0()}).
 *
 * <p>Where the library comes from, first match wins:
 *
 * <ol>
 *   <li>the path passed to {@link #ensureLoaded(String)} by {@link NativePoolPlugin}
 *       ({@code spark.nativepool.library}), if the plugin is the first to load;
 *   <li>the path in the system property {@value #LIBRARY_PROPERTY};
 *   <li>{@code System.loadLibrary("nativepool")}, i.e. {@code java.library.path}.
 * </ol>
 *
 * <p>Only one Go runtime may live in a process, so the library is loaded exactly once, by a static
 * holder, and the outcome (success or failure) is kept: a later caller asking for another path gets
 * the library already loaded and a warning in the log. Safe for concurrent use.
 */
public final class NativeLoader {

  /** System property naming the library file explicitly. */
  public static final String LIBRARY_PROPERTY = "nativepool.library";

  /** The library name for {@code System.loadLibrary}. */
  public static final String LIBRARY_NAME = "nativepool";

  private static final Logger LOG = LoggerFactory.getLogger(NativeLoader.class);

  /** A path offered before the holder ran; read once by the holder's initialiser. */
  private static final AtomicReference<String> OFFERED_PATH = new AtomicReference<>();

  private NativeLoader() {}

  /**
   * Loads and initialises the library unless this JVM already has, preferring {@code path} when it
   * is the first load.
   *
   * @param path an explicit library file, or null to use the system property or
   *     {@code java.library.path}
   * @return a description of where the library was loaded from
   * @throws IllegalStateException if loading or initialising failed (now or on the first attempt);
   *     the original error is the cause
   */
  public static String ensureLoaded(String path) {
    if (path != null && !path.isEmpty()) {
      OFFERED_PATH.compareAndSet(null, path);
    }
    Outcome outcome = Holder.OUTCOME;
    if (outcome.failure != null) {
      throw new IllegalStateException(
          "nativepool: native library not loaded from " + outcome.source, outcome.failure);
    }
    if (path != null && !path.isEmpty() && !sameFile(path, outcome.file)) {
      LOG.warn(
          "nativepool: library already loaded from {}; ignoring the request to load {}",
          outcome.source,
          path);
    }
    return outcome.source;
  }

  /** Whether the library has been loaded and initialised successfully. */
  public static boolean isLoaded() {
    return Holder.OUTCOME.failure == null;
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
      String offered = OFFERED_PATH.get();
      String property = System.getProperty(LIBRARY_PROPERTY);
      File file = null;
      String source;
      if (offered != null) {
        file = new File(offered).getAbsoluteFile();
        source = file + " (spark.nativepool.library)";
      } else if (property != null && !property.isEmpty()) {
        file = new File(property).getAbsoluteFile();
        source = file + " (system property " + LIBRARY_PROPERTY + ")";
      } else {
        source =
            System.mapLibraryName(LIBRARY_NAME)
                + " on java.library.path="
                + System.getProperty("java.library.path");
      }
      try {
        if (file != null) {
          System.load(file.getPath());
        } else {
          System.loadLibrary(LIBRARY_NAME);
        }
      } catch (UnsatisfiedLinkError | SecurityException e) {
        return new Outcome(source, file, e);
      }
      try {
        NativeBridge.init0();
      } catch (RuntimeException | LinkageError e) {
        return new Outcome(source, file, e);
      }
      LOG.info("nativepool: loaded {}", source);
      return new Outcome(source, file, null);
    }
  }
}
