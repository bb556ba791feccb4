package bridge

import "fmt"

// Pool kinds of openPool0 (its kind argument). Java's
// org.nativepool.spark.config.PoolKind is generated from poolKinds.
const (
	KindFairUnified   = 0 // pool.NewFairUnified
	KindGreedyUnified = 1 // pool.NewGreedyUnified
)

// A PoolKind is one kind of task pool: its code (openPool0's kind), its
// name in the configuration (spark.nativepool.pool), the logs and
// taskshared.Spec, and what it does (a sentence: the Javadoc of the Java
// constant, whose name is the configuration name in upper case).
type PoolKind struct {
	Code       int32
	ConfigName string
	Doc        string
}

// poolKinds declares the pool kinds, in code order.
var poolKinds = [...]PoolKind{
	{KindFairUnified, "fair_unified", "Comet's default fair_unified: a fair-share check per consumer against a pool size, then Spark."},
	{KindGreedyUnified, "greedy_unified", "Comet's greedy_unified: no ceiling of its own, Spark decides; the size is ignored."},
}

// PoolKinds returns the pool kinds, in code order. The result is a copy.
func PoolKinds() []PoolKind { return append([]PoolKind(nil), poolKinds[:]...) }

// kindName is the pool kind as configuration, taskshared.Spec and the logs
// name it.
func kindName(kind int32) string {
	for _, k := range poolKinds {
		if k.Code == kind {
			return k.ConfigName
		}
	}
	return fmt.Sprintf("kind %d", kind)
}

// A LeakKind is one kind of leak at task end (leaks.go): its code, as
// reportLeak0, recentLeaks0 and the logs carry it, and what leaked (a
// sentence: the Javadoc of the Java constant, whose name is the code in
// upper case with '-' as '_').
type LeakKind struct {
	Code string
	Doc  string
}

// leakKinds declares the leak kinds. Java's org.nativepool.spark.jni.LeakKind
// is generated from it.
var leakKinds = [...]LeakKind{
	{LeakReservation, "A reservation still holding bytes at its task's end (Java: its size(); Go: what the pool's close found). Accounting only: the bytes went back to Spark with the task, so they are never resident."},
	{LeakArrow, "A Go Arrow allocator closed with live buffers or imported batches still held."},
	{LeakExport, "A Go Arrow allocator closed with batches exported to Java that Java still holds (or Go batches Java still had open at its task's end, closed then): resident while Java holds them."},
	{LeakJavaArrow, "Java Arrow buffers the task's producer allocator still held: resident until released."},
}

// LeakKinds returns the leak kinds. The result is a copy.
func LeakKinds() []LeakKind { return append([]LeakKind(nil), leakKinds[:]...) }

// knownLeakKind reports whether code is one of the leak kinds.
func knownLeakKind(code string) bool {
	for _, k := range leakKinds {
		if k.Code == code {
			return true
		}
	}
	return false
}
