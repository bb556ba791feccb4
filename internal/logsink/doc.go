// Package logsink routes Go's slog records to the JVM's logging: the
// process's log router hands every enabled record to a Sink, which jni
// implements as one JNI upcall to the Java log sink
// (org.nativepool.spark.jni.GoLog.log), and Java logs it through SLF4J on a
// logger named after the Go package that made it. This package is the part
// that needs no JVM: the handler, the logger names, the levels and the text
// of a record; its tests drive it with a fake sink, and it builds and runs
// with CGO_ENABLED=0.
//
// Before configureLog0 (a Go-only process, tests, the Go example, the JVM
// before the plugin starts) the router adds nothing: each record goes to
// slog.Default()'s handler as it would without it.
//
// Once configured, levels are Java's, computed once per configureLog0 from
// each listed logger's effective SLF4J level: the handler's Enabled is one
// atomic load and a comparison with the lowest of them, and Handle drops a
// record below its own logger's level, so a disabled record never reaches
// the sink. A record the sink did not take is written to stderr.
//
// The level codes (LevelTrace … LevelOff) and the logger names
// (LoggerNames) are the shared constants of the boundary: their Java copy,
// org.nativepool.spark.jni.GoLoggers, is generated from them by
// internal/javaconsts.
//
// # Where each job lives
//
//	levels.go   the SLF4J level codes and names, slog levels to codes and
//	            back, configureLog0's string parsed into per-logger levels
//	loggers.go  the logger names: the list Java is asked levels for, and the
//	            logger of a record's Go package (loggerForFunction)
//	router.go   Router (configure, become slog's default), Record, Sink, the
//	            slog.Handler with its attributes, groups and task, and the
//	            stderr fallback
package logsink
