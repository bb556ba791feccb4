// Command libnativepool is built with -buildmode=c-shared into
// libnativepool.so, the library the JVM loads (see jni/doc.go). It exports
// the Java_org_nativepool_spark_jni_Natives_* natives of package jni, which
// the blank import links in; main never runs.
package main

import _ "github.com/nativepool/nativepool/jni"

func main() {}
