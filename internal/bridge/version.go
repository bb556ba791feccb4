package bridge

// Version is the release of nativepool this library is built from. It is
// the Maven project version of the JVM modules (the root pom.xml), and
// TestVersionMatchesPom keeps the two equal: the plugin jar carries the same
// string in org/nativepool/native/version.properties, and
// jni.LibraryLoader refuses a library whose version0 reports another one,
// before calling init0 (jni/API.md).
const Version = "0.1.0-SNAPSHOT"
