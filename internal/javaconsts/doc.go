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
//	javaconsts.go   Render and the files it returns, with their paths
//	java.go         the Java shapes: stats enums, LeakKind, GoLoggers, PoolKind
//	javadoc.go      Javadoc comments (escaping, wrapping at 100 columns), the
//	                generated-file header, Java string literals
//	cmd/javaconsts  the command go generate runs: writes Render's files
package javaconsts
