package spillfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/examples/internal/spillfile"
)

func newDir(t *testing.T, ext string) *spillfile.Dir {
	t.Helper()
	d, err := spillfile.New(t.TempDir(), "op-*", ext)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.RemoveAll()) })
	return d
}

// names lists the files in dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	return paths
}

func TestCreateNamesFilesInTheOrderTheyAreMadeAndCountsTheirBytes(t *testing.T) {
	d := newDir(t, ".arrow")
	for i := range 3 {
		f, err := d.Create()
		require.NoError(t, err)
		_, err = f.Write(make([]byte, 10*(i+1)))
		require.NoError(t, err)
		assert.Equal(t, int64(10*(i+1)), f.Bytes())
		require.NoError(t, f.Close())
	}
	assert.Equal(t, []string{"run-000001.arrow", "run-000002.arrow", "run-000003.arrow"}, names(t, d.Path()))
	fi, err := os.Stat(filepath.Join(d.Path(), "run-000002.arrow"))
	require.NoError(t, err)
	assert.Equal(t, int64(20), fi.Size())
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "readable by this user only")
}

func TestAnAbortedFileIsRemovedAndNotListedAsWritten(t *testing.T) {
	d := newDir(t, "")
	f, err := d.Create()
	require.NoError(t, err)
	_, err = f.Write([]byte("partial"))
	require.NoError(t, err)
	f.Abort()
	f.Abort() // idempotent
	assert.Empty(t, names(t, d.Path()))
	assert.Empty(t, d.Recent())
	require.ErrorIs(t, f.Close(), os.ErrClosed)
	_, err = f.Write([]byte("x"))
	require.ErrorIs(t, err, os.ErrClosed)
}

func TestWriteFileWritesTheBytesIntoTheNextFile(t *testing.T) {
	d := newDir(t, ".groups")
	w, err := d.WriteFile([]byte("abcdef"))
	require.NoError(t, err)
	assert.Equal(t, spillfile.Written{Path: filepath.Join(d.Path(), "run-000001.groups"), Bytes: 6}, w)
	got, err := os.ReadFile(w.Path)
	require.NoError(t, err)
	assert.Equal(t, "abcdef", string(got))
}

func TestRecentListsTheLastCompletedFilesOldestFirst(t *testing.T) {
	d := newDir(t, "")
	for range spillfile.RecentFiles + 3 {
		_, err := d.WriteFile([]byte("x"))
		require.NoError(t, err)
	}
	got := d.Recent()
	require.Len(t, got, spillfile.RecentFiles)
	for i, w := range got {
		assert.Equal(t, filepath.Join(d.Path(), fmt.Sprintf("run-%06d", i+4)), w.Path)
		assert.Equal(t, int64(1), w.Bytes)
	}
	got[0].Path = "changed"
	assert.NotEqual(t, "changed", d.Recent()[0].Path, "the list is a copy")
}

func TestRemoveAllRemovesTheDirectoryWithItsFiles(t *testing.T) {
	d, err := spillfile.New(t.TempDir(), "op-*", "")
	require.NoError(t, err)
	_, err = d.WriteFile([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, d.RemoveAll())
	_, err = os.Stat(d.Path())
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, d.RemoveAll(), "idempotent")
}

func TestNewInAMissingParentFailsAndCreatesNothing(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "missing")
	_, err := spillfile.New(parent, "op-*", "")
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(parent)
	require.ErrorIs(t, err, os.ErrNotExist)
}
