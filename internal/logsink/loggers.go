package logsink

import (
	"strings"
	"unicode"
)

// The SLF4J logger names of Go records (see loggerForFunction). RootLogger
// is also the logger of a record without a PC (the log package's output
// once the router is slog's default), and the level of any name Java did
// not report.
const (
	RootLogger   = "org.nativepool"
	engineLogger = RootLogger + ".engine"
	modulePath   = "github.com/nativepool/nativepool/"
)

// loggerNames are the loggers whose levels Java hands to configureLog0, in
// order: RootLogger, the module's packages that log, and the parent of
// engines' loggers. A logger not listed (an engine package's, or a package
// of the module's that logs rarely, such as arbiter) takes the level of its
// closest listed ancestor; SLF4J then applies its own.
var loggerNames = [...]string{
	RootLogger,
	RootLogger + ".pool",
	RootLogger + ".taskshared",
	RootLogger + ".ffi",
	RootLogger + ".bridge",
	RootLogger + ".jni",
	engineLogger,
}

// LoggerNames returns the loggers whose levels Java reports in
// configureLog0, in order. The Java copy,
// org.nativepool.spark.jni.GoLoggers.NAMES, is generated from it
// (internal/javaconsts).
func LoggerNames() []string { return loggerNames[:] }

// loggerForFunction maps a function's full name (runtime.Frame.Function)
// to the SLF4J logger of the records it makes: the module's packages to
// org.nativepool.<first path element> (pool, arbiter, taskshared, ffi, jni, bench;
// their sub-packages included), internal/<x> to org.nativepool.<x>
// (internal/bridge: org.nativepool.bridge), examples/<x> to
// org.nativepool.engine.<x>, a main package (an engine's own c-shared
// library) to org.nativepool.engine, and any other package (an engine's) to
// org.nativepool.engine.<last path element>. An empty name gives
// org.nativepool.
func loggerForFunction(fn string) string {
	if fn == "" {
		return RootLogger
	}
	pkg := packageOf(fn)
	if pkg == "main" {
		return engineLogger
	}
	if rel, ok := strings.CutPrefix(pkg, modulePath); ok {
		first, rest, _ := strings.Cut(rel, "/")
		second, _, _ := strings.Cut(rest, "/")
		switch {
		case first == "internal" && second != "":
			return RootLogger + "." + loggerPart(second)
		case first == "examples" && second != "":
			return engineLogger + "." + loggerPart(second)
		default:
			return RootLogger + "." + loggerPart(first)
		}
	}
	return engineLogger + "." + loggerPart(pkg[strings.LastIndexByte(pkg, '/')+1:])
}

// packageOf is the import path of the package of a function name such as
// "github.com/x/y/pool.(*Reservation).Grow.func1" or "main.run".
func packageOf(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// loggerPart keeps a logger name element to letters, digits and '_' (a
// package path element may hold '-' or '.'; a dot would add a level).
func loggerPart(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, s)
}
