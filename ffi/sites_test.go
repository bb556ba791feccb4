package ffi

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInternalFrameSkipsNativepoolsOwnPackagesButNotExamplesOrTests(t *testing.T) {
	const m = "github.com/nativepool/nativepool/"
	for _, tc := range []struct {
		fn, file string
		internal bool
	}{
		{"runtime.cgocallback", "asm_amd64.s", true},
		{"runtime/cgo.Handle.Value", "handle.go", true},
		{"_cgoexp_09e1a25afe6a_Java_org_nativepool_spark_jni_Natives_copyBatch0", "_cgo_gotypes.go", true},
		{"github.com/apache/arrow-go/v18/arrow/memory.(*Buffer).Reserve", "buffer.go", true},
		{m + "ffi.(*Allocator).allocate", "allocator.go", true},
		{m + "ffi/ffitest.AssertNoLeak", "ffitest.go", true},
		{m + "internal/bridge.(*Bridge).CopyBatch", "arrow.go", true},
		{m + "jni.copyRecordBatch", "arrow.go", true},
		{m + "jni.Java_org_nativepool_spark_jni_Natives_copyBatch0", "arrow_exports.go", true},
		{m + "pool.(*Reservation).TryGrow", "reservation.go", true},
		{m + "taskshared.(*Registry).Acquire", "registry.go", true},
		{m + "examples/sort.(*Sorter).Add", "sorter.go", false},
		{m + "ffi_test.leakyOperator", "leak_test.go", false},
		{m + "ffi.TestSomething", "allocator_test.go", false},
		{m + "poolside.Run", "run.go", false},
		{"main.main", "main.go", false},
		{"example.com/engine.(*Op).Next", "op.go", false},
	} {
		got := internalFrame(runtime.Frame{Function: tc.fn, File: tc.file})
		assert.Equal(t, tc.internal, got, "%s in %s", tc.fn, tc.file)
	}
}

func TestAllocatingFunctionFallsBackToTheForeignCallerWhenEveryGoFrameIsInternal(t *testing.T) {
	internal := []runtime.Frame{
		{Function: "github.com/apache/arrow-go/v18/arrow/memory.(*Buffer).Reserve", File: "buffer.go", Line: 1},
		{Function: "github.com/nativepool/nativepool/jni.copyRecordBatch", File: "arrow.go", Line: 2},
		{Function: "github.com/nativepool/nativepool/jni.Java_org_nativepool_spark_jni_Natives_copyBatch0", File: "arrow_exports.go", Line: 3},
	}
	java := "org.example.Job.run(Job.java:42)"
	assert.Equal(t, runtime.Frame{Function: "org.example.Job.run", File: "Job.java", Line: 42}, allocatingFunction(internal, java))
	assert.Equal(t, internal[0], allocatingFunction(internal, ""), "no caller: the first frame, as before")
	user := append([]runtime.Frame{{Function: "example.com/engine.Op", File: "op.go", Line: 9}}, internal...)
	assert.Equal(t, user[0], allocatingFunction(append(internal[:1:1], user...), java), "a Go frame outside nativepool wins over the caller")
}

func TestParseCallerReadsJavaStackTraceElements(t *testing.T) {
	for in, want := range map[string]runtime.Frame{
		"a.B.c(B.java:7)":      {Function: "a.B.c", File: "B.java", Line: 7},
		"a.B.c (B.java:7)":     {Function: "a.B.c", File: "B.java", Line: 7},
		"a.B.c(Native Method)": {Function: "a.B.c", File: "Native Method"},
		"a.B.c(B.java:x)":      {Function: "a.B.c(B.java:x)"},
		"plain text":           {Function: "plain text"},
	} {
		assert.Equal(t, want, parseCaller(in), in)
	}
	assert.Equal(t, "a.B.c (B.java:7)", siteName(parseCaller("a.B.c(B.java:7)")))
	assert.Equal(t, "plain text", siteName(parseCaller("plain text")))
}
