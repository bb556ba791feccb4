//go:build cgo

package jni

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJVMSmoke builds libnativepool.so, loads it into a real JVM under
// -Xcheck:jni and runs testdata/jvm/.../jni/Smoke.java: every native of API.md, the
// exceptions and messages, the original throwable rethrown from each upcall,
// re-entrant spill (reclaim0 from inside acquireMemory, shrink0 from inside
// spill), concurrent and short-lived threads. It fails on any failed check
// and on any JNI warning. Skipped with -short or without a JDK.
func TestJVMSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the c-shared library and starts a JVM")
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Skip("no javac")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("no java")
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libnativepool.so")
	build := exec.Command("go", "build", "-tags", "nativepool_jvmtest", "-buildmode=c-shared", "-o", lib, "./libnativepool")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	srcs, err := filepath.Glob("testdata/jvm/org/nativepool/spark/jni/*.java")
	require.NoError(t, err)
	classes := filepath.Join(dir, "classes")
	out, err = exec.Command(javac, append([]string{"-d", classes}, srcs...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)

	run := exec.Command(java, "-Xcheck:jni", "-cp", classes, "org.nativepool.spark.jni.Smoke", lib)
	out, err = run.CombinedOutput()
	text := string(out)
	checks := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "ok: ") {
			checks++
		}
		if strings.HasPrefix(line, "FAIL") || strings.Contains(line, "WARNING in native method") ||
			strings.Contains(line, "FATAL ERROR in native method") {
			t.Error(line)
		}
	}
	require.NoError(t, err, "%s", text)
	require.Contains(t, text, "SMOKE PASSED")
	t.Logf("%d checks passed", checks)
	if testing.Verbose() {
		t.Log(text)
	}
}
