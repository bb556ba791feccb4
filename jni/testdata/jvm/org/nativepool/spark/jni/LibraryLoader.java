// Test scaffolding for jni/jvm_test.go, not the real module: the two natives the real
// org.nativepool.spark.jni.LibraryLoader declares (the library's version, and its initialisation).
package org.nativepool.spark.jni;
final class LibraryLoader {
  static native String version0();
  static native void init0();
}
