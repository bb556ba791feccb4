// Package javaconsts renders the Java copies of the constants that the Go
// side and the Java module share: the stats enums (internal/bridge's stat
// tables), the pool kinds and the leak kinds (internal/bridge/kinds.go),
// and the Go log levels and logger names (internal/logsink). Each constant
// is declared once, in Go; the Java sources are generated from those
// declarations by go generate ./internal/bridge/ (the command
// cmd/javaconsts), and TestGeneratedJavaMatchesTheSources fails while a
// file under spark/ is missing or differs from what Render returns.
//
// Render is a pure function of the Go declarations: no file is read. The
// output follows Google Java Format's layout (2-space indent, at most 100
// columns), has Javadoc on every constant and public member, depends on no
// other class of the project, and compiles without warnings under javac
// -Xlint:all.
//
// # Where each job lives
//
//	javaconsts.go        Render and the files it returns
//	java.go              the Java shapes: stats enums, LeakKind, GoLoggers, PoolKind
//	javadoc.go           Javadoc comments: escaping and wrapping at 100 columns
//	cmd/javaconsts       the command go generate runs: writes Render's files
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
