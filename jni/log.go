package jni

/*
#include "np.h"
*/
import "C"

import (
	"errors"
	"log/slog"
	"unicode/utf16"
	"unsafe"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/internal/logsink"
)

// processLog is the process's log router (internal/logsink), part of the
// process registry like process, whose logger writes through it: until
// configureLog0 it passes every record to slog's default handler; from then
// on it hands them to SLF4J through javaLogSink, and it is slog's default
// handler too (slog.SetDefault, once per process, never undone). A record is
// process-wide by nature: there is one slog default and one JVM.
var processLog = logsink.NewRouter(javaLogSink)

// javaLogSink hands a record to GoLog.log: one np_log call (GetEnv,
// attach if needed, the static call, exception cleared), from any
// goroutine. It holds no Go lock, and GoLog.log never calls native code,
// so a record made while a pool's lock is held cannot deadlock on its way.
func javaLogSink(jr logsink.Record) error {
	logger := utf16Of(jr.Logger)
	text := utf16Of(jr.Text)
	rc := C.np_log(C.jint(jr.Level),
		(*C.jchar)(unsafe.Pointer(&logger[0])), C.jsize(len(logger)-1),
		C.jlong(jr.Task),
		(*C.jchar)(unsafe.Pointer(&text[0])), C.jsize(len(text)-1))
	switch rc {
	case npOK:
		return nil
	case npException:
		return errors.New("GoLog.log raised an exception (cleared), or one was pending on this thread")
	default:
		return npStatusError("GoLog.log", rc)
	}
}

// utf16Of is s in UTF-16 with one trailing zero, so that even an empty
// string has an element to point at (the zero is not passed as text).
func utf16Of(s string) []uint16 {
	return append(utf16.Encode([]rune(s)), 0)
}

// Logger returns a logger over the process's log router: before the plugin
// configures logging it writes where slog.Default() writes at the time of
// each record; afterwards through SLF4J, on the logger of the calling
// package. Engines that keep a logger from package initialisation on should
// take this one: a logger taken from slog.Default() before the plugin starts
// keeps slog's original handler, whose output then reaches SLF4J only as a
// plain text line of the log package (no level, no package, no task).
func Logger() *slog.Logger { return slog.New(processLog.Handler()) }

// TaskAttr is the attribute that names the task attempt a record is about:
// add it to an engine's records (or to its logger, with Logger.With) so that
// they carry the task in SLF4J even when they are made off the task's thread
// (a goroutine). The task's stage and partition are added by the Java side
// when it knows the task (a pool is open for it, or the record is made on
// its thread). Outside the JVM it is an ordinary task=<id> attribute.
func TaskAttr(taskAttemptID int64) slog.Attr { return bridge.LogTask(taskAttemptID) }
