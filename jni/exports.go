package jni

/*
#include "np.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nativepool/nativepool/internal/arrowruntime"
	"github.com/nativepool/nativepool/internal/bridge"

	"github.com/nativepool/nativepool/pool"
)

// process is the process registry: the library's one Bridge, holding the
// pool and reservation handle tables, the task-shared registry
// (taskshared.Registry), the settings of configure0 and the cumulative
// process counters behind processStats0. The JVM loads the library once per
// process (one Go runtime per process, doc.go), so this is the one instance
// every native method works on. With the log router (processLog, log.go)
// it is the only package-level state of this package; everything else
// hangs off it, and tests build their own Bridge with bridge.NewBridge
// instead of touching it.
var process = newProcess()

// newProcess builds the process registry on the real process runtime
// (malloc.go: the Go runtime, glibc's mallopt, /proc), with ffi as its
// Arrow runtime and the process's log router as its logger.
func newProcess() *bridge.Bridge {
	b := bridge.NewBridge(slog.New(processLog.Handler()), arrowruntime.FFI)
	b.UseProcessRuntime(processRuntime())
	return b
}

// The natives of org.nativepool.spark.jni.Natives (jni/API.md) for pools
// and reservations. Each one converts its JNI arguments, calls the process
// Bridge, and lets endCall make the outcome pending in env: no panic ever
// crosses, no Go lock is held when it returns, and nothing is left in
// goroutine-local storage (none is used here). Returned values are ignored
// by Java when an exception is pending; they are then 0 or null.
//
// The constants shared with Java (pool kinds, stats tables, leak kinds, log
// levels and logger names) are declared in internal/bridge and
// internal/logsink; their Java copies are generated (internal/javaconsts).

//export Java_org_nativepool_spark_jni_LibraryLoader_version0
func Java_org_nativepool_spark_jni_LibraryLoader_version0(env *jniEnv, _ jclass) (v jstring) {
	// Needs no init0: the loader compares it with the jar's version before
	// init0 runs.
	defer func() { endCall(env, recover(), nil) }()
	return goStringToJava(env, bridge.Version)
}

//export Java_org_nativepool_spark_jni_LibraryLoader_init0
func Java_org_nativepool_spark_jni_LibraryLoader_init0(env *jniEnv, _ jclass) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	if rc := C.np_init(env); rc != npOK && !exceptionPending(env) {
		err = npStatusError("init0", rc)
	}
	process.MeasureGoBaseline() // the idle runtime's footprint, once
}

//export Java_org_nativepool_spark_jni_Natives_openPool0
func Java_org_nativepool_spark_jni_Natives_openPool0(env *jniEnv, _ jclass, taskAttemptID jlong, kind jint, poolSize, chunkSize jlong, owner jobject) (h jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	if owner == 0 {
		err = fmt.Errorf("nativepool: openPool(task %d): owner is null: %w", int64(taskAttemptID), bridge.ErrInvalidArgument)
		return 0
	}
	id, err := process.OpenPool(int64(taskAttemptID), int32(kind), int64(poolSize), int64(chunkSize), func(task int64) (bridge.OwnedUpstream, error) {
		// Only when this open creates the pool: the one global ref, and the
		// task handle stored before any other open can reach the pool.
		up, err := newJVMUpstream(env, owner)
		if err != nil {
			return nil, err
		}
		C.np_set_task_handle(env, owner, C.jlong(task))
		return up, nil
	})
	if err != nil {
		return 0
	}
	tellRegisteredOwner(env, owner, id)
	return jlong(id)
}

//export Java_org_nativepool_spark_jni_Natives_closePool0
func Java_org_nativepool_spark_jni_Natives_closePool0(env *jniEnv, _ jclass, poolHandle jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	err = process.ClosePool(int64(poolHandle))
}

//export Java_org_nativepool_spark_jni_Natives_newReservation0
func Java_org_nativepool_spark_jni_Natives_newReservation0(env *jniEnv, _ jclass, poolHandle jlong, consumerName jstring, canSpill jboolean, spiller jobject) (h jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	name, ok, err := javaStringToGo(env, consumerName)
	if err != nil {
		return 0
	}
	if !ok {
		err = fmt.Errorf("nativepool: newReservation: consumer name is null: %w", bridge.ErrInvalidArgument)
		return 0
	}
	s, err := newJVMSpiller(env, spiller)
	if err != nil {
		return 0
	}
	var sp bridge.OwnedSpiller
	if s != nil {
		sp = s
	}
	id, err := process.NewReservation(int64(poolHandle), name, canSpill != 0, sp)
	return jlong(id)
}

//export Java_org_nativepool_spark_jni_Natives_tryGrow0
func Java_org_nativepool_spark_jni_Natives_tryGrow0(env *jniEnv, _ jclass, res, n jlong) (refusal jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	err = process.TryGrow(int64(res), int64(n))
	var je *bridge.JavaException
	if err != nil && !errors.As(err, &je) && errors.Is(err, pool.ErrResourcesExhausted) {
		msg := err.Error()
		err = nil
		return goStringToJava(env, msg)
	}
	return 0
}

//export Java_org_nativepool_spark_jni_Natives_grow0
func Java_org_nativepool_spark_jni_Natives_grow0(env *jniEnv, _ jclass, res, n jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	err = process.Grow(int64(res), int64(n))
}

//export Java_org_nativepool_spark_jni_Natives_shrink0
func Java_org_nativepool_spark_jni_Natives_shrink0(env *jniEnv, _ jclass, res, n jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	err = process.Shrink(int64(res), int64(n))
}

//export Java_org_nativepool_spark_jni_Natives_size0
func Java_org_nativepool_spark_jni_Natives_size0(env *jniEnv, _ jclass, res jlong) (size jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	n, err := process.Size(int64(res))
	return jlong(n)
}

//export Java_org_nativepool_spark_jni_Natives_closeReservation0
func Java_org_nativepool_spark_jni_Natives_closeReservation0(env *jniEnv, _ jclass, res jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	err = process.CloseReservation(int64(res))
}

//export Java_org_nativepool_spark_jni_Natives_reclaim0
func Java_org_nativepool_spark_jni_Natives_reclaim0(env *jniEnv, _ jclass, poolHandle, target jlong) (freed jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	n, err := process.Reclaim(int64(poolHandle), int64(target))
	return jlong(n)
}

//export Java_org_nativepool_spark_jni_Natives_reclaimTask0
func Java_org_nativepool_spark_jni_Natives_reclaimTask0(env *jniEnv, _ jclass, task, target jlong) (freed jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	n, err := process.ReclaimTask(int64(task), int64(target))
	return jlong(n)
}

//export Java_org_nativepool_spark_jni_Natives_poolStats0
func Java_org_nativepool_spark_jni_Natives_poolStats0(env *jniEnv, _ jclass, poolHandle jlong) (stats jlongArray) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	a, err := process.PoolStats(int64(poolHandle))
	if err != nil {
		return 0
	}
	return goLongsToJava(env, a)
}

//export Java_org_nativepool_spark_jni_Natives_consumerPeaks0
func Java_org_nativepool_spark_jni_Natives_consumerPeaks0(env *jniEnv, _ jclass, poolHandle jlong) (peaks jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	m, err := process.ConsumerPeaks(int64(poolHandle))
	if err != nil {
		return 0
	}
	return goStringToJava(env, bridge.EncodeConsumerPeaks(m))
}

//export Java_org_nativepool_spark_jni_Natives_processStats0
func Java_org_nativepool_spark_jni_Natives_processStats0(env *jniEnv, _ jclass) (stats jlongArray) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	return goLongsToJava(env, process.ProcessStats().Array())
}

//export Java_org_nativepool_spark_jni_Natives_takeSpill0
func Java_org_nativepool_spark_jni_Natives_takeSpill0(env *jniEnv, _ jclass, taskAttemptID jlong) (spill jlongArray) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	s := process.TakeSpill(int64(taskAttemptID))
	return goLongsToJava(env, []int64{s.Memory, s.Disk})
}

//export Java_org_nativepool_spark_jni_Natives_configure0
func Java_org_nativepool_spark_jni_Natives_configure0(env *jniEnv, _ jclass, logging jboolean, thresholds jlongArray) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	th, err := javaLongsToGo(env, thresholds)
	if err != nil {
		return
	}
	err = process.Configure(bridge.Settings{Logging: logging != 0, Thresholds: th})
}

//export Java_org_nativepool_spark_jni_Natives_configureLog0
func Java_org_nativepool_spark_jni_Natives_configureLog0(env *jniEnv, _ jclass, levels jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	s, _, err := javaStringToGo(env, levels)
	if err != nil {
		return
	}
	if rc := C.np_log_init(env); rc != npOK {
		if !exceptionPending(env) {
			err = npStatusError("configureLog0", rc)
		}
		return
	}
	if err = processLog.Configure(s); err == nil {
		processLog.InstallDefault()
	}
}

//export Java_org_nativepool_spark_jni_Natives_configureRuntime0
func Java_org_nativepool_spark_jni_Natives_configureRuntime0(env *jniEnv, _ jclass, mallocMmapThreshold, goMemoryLimit, memoryOverhead jlong) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	err = process.ConfigureRuntime(bridge.RuntimeSettings{
		MallocMmapThreshold: int64(mallocMmapThreshold),
		GoMemoryLimit:       int64(goMemoryLimit),
		MemoryOverhead:      int64(memoryOverhead),
	})
}

//export Java_org_nativepool_spark_jni_Natives_configureGuard0
func Java_org_nativepool_spark_jni_Natives_configureGuard0(env *jniEnv, _ jclass, enabled jboolean, reserve, limit jlong, limitExplicit, processTree jboolean, offHeap jobject) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	s := bridge.GuardSettings{
		Enabled:       enabled != 0,
		Reserve:       int64(reserve),
		Limit:         int64(limit),
		LimitExplicit: limitExplicit != 0,
		ProcessTree:   processTree != 0,
	}
	var oh *jvmOffHeap
	if oh, err = newJVMOffHeap(env, offHeap); err != nil {
		return
	}
	if oh != nil {
		s.OffHeap = oh // ConfigureGuard owns it from here on, and closes it
	}
	err = process.ConfigureGuard(s)
}

//export Java_org_nativepool_spark_jni_Natives_addSpillDir0
func Java_org_nativepool_spark_jni_Natives_addSpillDir0(env *jniEnv, _ jclass, dir jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	d, ok, err := javaStringToGo(env, dir)
	if err != nil {
		return
	}
	if !ok {
		err = fmt.Errorf("nativepool: addSpillDir: dir is null: %w", bridge.ErrInvalidArgument)
		return
	}
	err = process.AddSpillDir(d)
}

//export Java_org_nativepool_spark_jni_Natives_guardEpisodes0
func Java_org_nativepool_spark_jni_Natives_guardEpisodes0(env *jniEnv, _ jclass) (episodes jstring) {
	var err error
	defer func() { endCall(env, recover(), err) }()
	return goStringToJava(env, bridge.FormatGuardEpisodes(process.GuardEpisodes(), time.Now()))
}
