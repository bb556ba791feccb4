// Command native is the Go half of the Spark demo (examples/spark), built
// with
//
//	go build -buildmode=c-shared -o build/lib/libnativesort.so ./examples/spark/native
//
// into the one library the demo's executor JVM loads. It is how a query
// engine written in Go uses nativepool inside Spark: the engine links
// nativepool into its own c-shared library (one Go runtime per process,
// golang/go#65050), so this library carries every native of
// org.nativepool.spark.jni.Natives and the process registry, through the
// import of package jni, and is loaded instead of libnativepool.so
// (spark.nativepool.library). Its own natives belong to
// org.nativepool.spark.example.SortBridge: an external sort
// (examples/sort, package extsort) that takes Arrow batches from Java
// through the C Data Interface, registers a spillable consumer in the
// task's pool (jni.JoinTaskPool), and hands sorted batches back the same
// way.
//
// Java names the task once, in create0; later calls pass only the
// sorter's handle. Each native call that runs a sorter's work makes the
// sorter's task the current task of its goroutine for the call's duration
// and clears it on return (taskshared.Run, task.go), and the engine reads
// the task's pool and id from taskshared.Current below that point.
//
// # The natives of SortBridge
//
//	create0(taskAttemptId, name, batchRows, tempDir) long   a sorter on the task's pool
//	push0(sorter, arrayAddr, schemaAddr)                    import a batch, copy it in, release it
//	finish0(sorter)                                         end of input
//	next0(sorter, outArrayAddr, outSchemaAddr) boolean      export the next sorted batch; false at the end
//	stats0(sorter) long[]                                   SortStat (sorts.go)
//	close0(sorter)                                          release everything; a leaked output batch throws
//	sample0() long[]                                        SAMPLE_*: live sorters' books, Go runtime, RSS
//
// Who pays across the C Data Interface follows package ffi: the producer.
// A batch Java exports to push0 stays charged to Java's allocator until Go
// releases it, which push0 does before returning (the sorter copies the
// rows into its own accounted buffer); a batch next0 exports stays charged
// to the sorter's reservation until Java releases it, so Java must import
// it with an allocator that charges nothing.
//
// Every export follows jni's rules through jni.EngineCall: a panic becomes
// RuntimeException, a Java exception raised by an upcall during the call
// (an InterruptedException while Spark makes the task wait for memory) is
// rethrown as is, a bad or forged handle is IllegalArgumentException, a
// closed one IllegalStateException. Spark's spill of the task's native
// consumer reaches the sorter's Spill on the task thread, through reclaimTask0,
// while no export of this library holds a lock (extsort's re-entrancy
// rules).
//
// # Logging
//
// The Go side logs through log/slog's default logger: on stderr until the
// plugin starts, then through log4j (jni: each package on its own
// org.nativepool.* logger, the task in the text), at the level log4j gives
// those loggers or spark.nativepool.logLevel. Set NATIVEPOOL_LOG_LEVEL
// (debug, info, warn, error; default info) to change it: run.sh passes it
// on as spark.nativepool.logLevel, and init below applies it to the
// records made before the plugin starts. error keeps the pools' per-event
// warnings (a spill request that found nothing to free) out of a demo's
// output; their counts are in the report either way.
package main

import (
	"log/slog"
	"os"
)

// init applies NATIVEPOOL_LOG_LEVEL: the process's logging policy, which a
// library's main package owns.
func init() {
	if v, ok := os.LookupEnv("NATIVEPOOL_LOG_LEVEL"); ok {
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			slog.Warn("nativesort: ignoring NATIVEPOOL_LOG_LEVEL", "value", v, "err", err)
			return
		}
		slog.SetLogLoggerLevel(l)
	}
}

func main() {}
