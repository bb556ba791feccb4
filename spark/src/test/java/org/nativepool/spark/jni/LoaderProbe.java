package org.nativepool.spark.jni;


/**
 * Run in a fresh JVM by {@link LibraryLoaderTest} (the loader works once per JVM): calls
 * {@link LibraryLoader#ensureLoaded(String)} with each argument ("-" for null) and prints one line
 * per call: {@code ok <source>} or {@code fail <class>|<message>|<cause class>|<cause message>}.
 */
public final class LoaderProbe {
  private LoaderProbe() {}

  public static void main(String[] args) {
    for (String a : args) {
      try {
        System.out.println("ok " + LibraryLoader.ensureLoaded("-".equals(a) ? null : a));
      } catch (RuntimeException e) {
        Throwable c = e.getCause();
        System.out.println(
            "fail "
                + e.getClass().getName()
                + "|"
                + e.getMessage()
                + "|"
                + (c == null ? "null" : c.getClass().getName())
                + "|"
                + (c == null ? "" : c.getMessage()));
      }
    }
  }
}
