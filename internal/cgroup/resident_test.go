package cgroup

import (
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// status is a 6.x /proc/<pid>/status with the given Rss lines.
func status(rss string) string {
	return "Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\nPPid:\t1\n" +
		"VmPeak:\t 9876544 kB\nVmSize:\t 9812344 kB\nVmLck:\t       0 kB\nVmPin:\t       0 kB\n" +
		"VmHWM:\t 3145728 kB\n" + rss + "VmData:\t 4194304 kB\nVmStk:\t     132 kB\nVmExe:\t       4 kB\n" +
		"VmLib:\t   23456 kB\nVmPTE:\t    6540 kB\nVmSwap:\t       0 kB\nThreads:\t87\n"
}

func TestProcessResident(t *testing.T) {
	tests := []struct {
		name   string
		status string
		want   int64
	}{
		{"RssAnon + RssShmem; RssFile, clean file-backed pages, does not count",
			status("VmRSS:\t 3000000 kB\nRssAnon:\t 2500000 kB\nRssFile:\t  450000 kB\nRssShmem:\t   50000 kB\n"),
			(2500000 + 50000) << 10},
		{"no RssShmem line: RssAnon alone",
			status("VmRSS:\t 3000000 kB\nRssAnon:\t 2500000 kB\nRssFile:\t  500000 kB\n"), 2500000 << 10},
		{"a kernel without the split (before 4.5): VmRSS, every resident page",
			status("VmRSS:\t 3000000 kB\n"), 3000000 << 10},
		{"malformed Rss lines are skipped",
			status("VmRSS:\t 3000000 kB\nRssAnon:\t lots kB\nRssShmem:\t 12 MB\n"), 3000000 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ProcessResident(files{"/proc/self/status": tt.status}.reader())
			require.NoError(t, err)
			assert.Equal(t, tt.want, n)
		})
	}
	t.Run("neither RssAnon nor VmRSS (a kernel thread's status)", func(t *testing.T) {
		_, err := ProcessResident(files{"/proc/self/status": "Name:\tkthreadd\nState:\tS (sleeping)\n"}.reader())
		require.ErrorIs(t, err, ErrMalformed)
	})
	t.Run("no /proc", func(t *testing.T) {
		_, err := ProcessResident(files{}.reader())
		require.ErrorIs(t, err, fs.ErrNotExist)
	})
	t.Run("another process", func(t *testing.T) {
		n, err := ProcessResidentProc(files{"/proc/77/status": status("RssAnon:\t 1 kB\nRssShmem:\t 2 kB\n")}.reader(), "/proc/77")
		require.NoError(t, err)
		assert.Equal(t, int64(3<<10), n)
	})
}

// TestProcessResidentSeesThisProcessTouchMemory checks the real
// /proc/self/status: 32 MiB allocated and written raise the figure.
func TestProcessResidentSeesThisProcessTouchMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/status is Linux's")
	}
	// Return free heap pages to the kernel first, so the buffer below takes
	// fresh ones (a previous run's buffer would otherwise be reused
	// resident).
	debug.FreeOSMemory()
	before, err := ProcessResident(os.ReadFile)
	require.NoError(t, err)
	b := make([]byte, 32*mib)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after, err := ProcessResident(os.ReadFile)
	require.NoError(t, err)
	runtime.KeepAlive(b)
	t.Logf("RssAnon+RssShmem: %d MiB, then %d MiB after touching 32 MiB", before>>20, after>>20)
	assert.GreaterOrEqual(t, after-before, 30*mib)
}
