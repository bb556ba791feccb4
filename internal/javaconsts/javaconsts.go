package javaconsts

import (
	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/internal/logsink"
)

// Command is what the generated files say produced them and how to run it
// again.
const Command = "go generate ./internal/bridge/"

// The Java packages of the generated sources, and their directories under
// the repository root.
const (
	JNIPackage    = "org.nativepool.spark.jni"
	ConfigPackage = "org.nativepool.spark.config"
	javaRoot      = "spark/src/main/java/"
)

// A File is one generated Java source.
type File struct {
	Path string // slash-separated, relative to the repository root
	Text []byte
}

// Render returns every generated Java source, in a fixed order: the four
// stats enums in the order of bridge.StatTables, LeakKind, GoLoggers and
// PoolKind.
func Render() []File {
	var out []File
	for _, t := range bridge.StatTables() {
		out = append(out, file(JNIPackage, t.Enum, statEnum(t)))
	}
	out = append(out,
		file(JNIPackage, "LeakKind", leakKindEnum(bridge.LeakKinds())),
		file(JNIPackage, "GoLoggers", goLoggersClass(logsink.RootLogger, logsink.LoggerNames(), logsink.LevelNames())),
		file(ConfigPackage, "PoolKind", poolKindEnum(bridge.PoolKinds())),
	)
	return out
}

// file is the File of class name in package pkg with text.
func file(pkg, name, text string) File {
	return File{Path: javaRoot + packageDir(pkg) + "/" + name + ".java", Text: []byte(text)}
}

// packageDir is a Java package as a slash-separated directory.
func packageDir(pkg string) string {
	b := []byte(pkg)
	for i, c := range b {
		if c == '.' {
			b[i] = '/'
		}
	}
	return string(b)
}
