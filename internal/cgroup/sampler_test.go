package cgroup

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onDisk writes the fixture tree under a temporary root and returns the
// group Locate finds in it, its directories moved under that root.
func onDisk(t testing.TB, f files) Group {
	t.Helper()
	g, ok, err := Locate(f.reader())
	require.NoError(t, err)
	require.True(t, ok)
	root := t.TempDir()
	for name, content := range f {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	g.Dir = root + g.Dir
	for i, d := range g.LimitDirs {
		g.LimitDirs[i] = root + d
	}
	return g
}

func TestSamplerReadsWhatGroupReadReads(t *testing.T) {
	d1 := "/sys/fs/cgroup/memory/kubepods/burstable/pod1/exec1"
	for name, f := range map[string]files{
		"v1":                         v1Exec(),
		"v1 without oom_control":     v1Exec().without(d1 + "/memory.oom_control"),
		"v2":                         v2Exec(),
		"v2 without events/pressure": v2Exec().without(v2Container+"/memory.events", v2Container+"/memory.pressure"),
	} {
		t.Run(name, func(t *testing.T) {
			g := onDisk(t, f)
			want, err := g.Read(os.ReadFile)
			require.NoError(t, err)
			s, err := NewSampler(g)
			require.NoError(t, err)
			defer s.Close()
			assert.Equal(t, g, s.Group())
			for range 3 {
				got, err := s.Read()
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
		})
	}
}

func TestSamplerSeesNewContentAndGrowsItsBuffer(t *testing.T) {
	g := onDisk(t, v2Exec())
	s, err := NewSampler(g)
	require.NoError(t, err)
	defer s.Close()
	r, err := s.Read()
	require.NoError(t, err)
	require.Equal(t, 3*gib, r.Usage)

	// The kernel regenerates a file read at offset 0; a regular file shows
	// its new content the same way, since the Sampler reads from 0 each time.
	require.NoError(t, os.WriteFile(g.Dir+"/memory.current", []byte("1073741824\n"), 0o644))
	long := strings.Repeat("some_future_counter 12345678\n", 1000) + statV2(5*mib, 0, 0, 0, 0, 0, 0)
	require.Greater(t, len(long), 3*samplerBuf)
	require.NoError(t, os.WriteFile(g.Dir+"/memory.stat", []byte(long), 0o644))
	r, err = s.Read()
	require.NoError(t, err)
	assert.Equal(t, gib, r.Usage)
	assert.Equal(t, 5*mib, r.Anon, "a memory.stat longer than the buffer is read whole")
}

func TestSamplerErrors(t *testing.T) {
	t.Run("essential file missing at NewSampler", func(t *testing.T) {
		g := onDisk(t, v2Exec())
		require.NoError(t, os.Remove(g.Dir+"/memory.stat"))
		_, err := NewSampler(g)
		require.ErrorIs(t, err, fs.ErrNotExist)
	})
	t.Run("a Group that was never located", func(t *testing.T) {
		_, err := NewSampler(Group{})
		require.ErrorIs(t, err, ErrMalformed)
	})
	t.Run("Read after Close, Close twice", func(t *testing.T) {
		s, err := NewSampler(onDisk(t, v1Exec()))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.NoError(t, s.Close())
		_, err = s.Read()
		require.ErrorIs(t, err, os.ErrClosed)
	})
	t.Run("malformed usage", func(t *testing.T) {
		g := onDisk(t, v1Exec())
		require.NoError(t, os.WriteFile(g.Dir+"/memory.usage_in_bytes", []byte("x\n"), 0o644))
		s, err := NewSampler(g)
		require.NoError(t, err)
		defer s.Close()
		_, err = s.Read()
		require.ErrorIs(t, err, ErrMalformed)
	})
}

func TestSamplerReadAllocatesNothing(t *testing.T) {
	s, err := NewSampler(onDisk(t, v2Exec()))
	require.NoError(t, err)
	defer s.Close()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := s.Read(); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}
