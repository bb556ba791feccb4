package writeback_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/writeback"
)

// Add takes only absolute paths of existing directories, once each; a
// refused one leaves the set as it was.
func TestAddTakesOnlyExistingAbsoluteDirectoriesOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	var d writeback.Dirs
	require.NoError(t, d.Add(dir))
	require.NoError(t, d.Add(dir+"/"), "the same directory, spelled differently")
	for _, bad := range []string{"", "relative/dir", file, filepath.Join(dir, "missing")} {
		err := d.Add(bad)
		require.Error(t, err, bad)
		assert.True(t, errors.Is(err, writeback.ErrInvalidDir), "%q: %v", bad, err)
	}
	assert.Equal(t, []string{dir}, d.List())
}

// WriteBack visits the regular files written within Recent, down to
// MaxDepth levels, and skips older files, deeper ones and directories that
// vanished.
func TestWriteBackVisitsRecentlyWrittenFilesDownToMaxDepth(t *testing.T) {
	root := t.TempDir()
	write := func(rel string, n int) string {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, make([]byte, n), 0o600))
		return p
	}
	write("a.spill", 100)
	write("blockmgr-1/0f/temp_local_1", 200)
	write("blockmgr-1/0f/deeper/x", 300)          // depth 4: visited
	write("blockmgr-1/0f/deeper/y/too-deep", 400) // depth 5: not
	old := write("blockmgr-1/10/old", 500)
	past := time.Now().Add(-2 * writeback.Recent)
	require.NoError(t, os.Chtimes(old, past, past))
	require.NoError(t, os.Symlink(old, filepath.Join(root, "link")))

	var d writeback.Dirs
	require.NoError(t, d.Add(root))
	r := d.WriteBack(time.Now())
	assert.Equal(t, writeback.Result{Files: 3, Bytes: 600}, r)

	require.NoError(t, os.RemoveAll(root))
	assert.Equal(t, writeback.Result{}, d.WriteBack(time.Now()), "a directory that vanished is skipped")
}
