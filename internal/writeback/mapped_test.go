package writeback_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/writeback"
)

// MappedFiles lists each mapped file once, path spaces kept, and leaves out
// anonymous mappings, pseudo-paths, deleted files and lines that do not
// parse.
func TestMappedFilesListsEachMappedFileOnce(t *testing.T) {
	maps := `55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234   /usr/lib/jvm/java-17/bin/java
55d0c0a01000-55d0c0a02000 r-xp 00001000 fd:01 1234   /usr/lib/jvm/java-17/bin/java
55d0c1000000-55d0c1021000 rw-p 00000000 00:00 0      [heap]
7f3a10000000-7f3a10021000 rw-p 00000000 00:00 0 
7f3a20000000-7f3a28a00000 r-xp 00000000 fd:01 99     /tmp/comet-native-42/libcomet.so
7f3a30000000-7f3a30001000 r--p 00000000 fd:01 98     /tmp/dir with spaces/lib x.so
7f3a40000000-7f3a40001000 r--p 00000000 fd:01 97     /tmp/gone.so (deleted)
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]
garbage
`
	assert.Equal(t, []string{
		"/usr/lib/jvm/java-17/bin/java", "/tmp/comet-native-42/libcomet.so", "/tmp/dir with spaces/lib x.so",
	}, writeback.MappedFiles(strings.NewReader(maps)))
}

// WriteBackMapped writes the mapped files written within Recent (a native
// library extracted at load) and leaves older ones (the JDK's) and missing
// ones alone.
func TestWriteBackMappedWritesOnlyRecentlyWrittenMappedFiles(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "libengine.so")
	require.NoError(t, os.WriteFile(fresh, make([]byte, 4096), 0o600))
	old := filepath.Join(dir, "libjvm.so")
	require.NoError(t, os.WriteFile(old, make([]byte, 8192), 0o600))
	past := time.Now().Add(-2 * writeback.Recent)
	require.NoError(t, os.Chtimes(old, past, past))
	maps := strings.Join([]string{
		"7f0000000000-7f0000001000 r-xp 00000000 fd:01 1 " + fresh,
		"7f0000001000-7f0000002000 r--p 00001000 fd:01 1 " + fresh,
		"7f0000002000-7f0000004000 r-xp 00000000 fd:01 2 " + old,
		"7f0000004000-7f0000005000 r-xp 00000000 fd:01 3 " + filepath.Join(dir, "missing.so"),
	}, "\n")

	var d writeback.Dirs
	r := d.WriteBackMapped(time.Now(), strings.NewReader(maps))
	assert.Equal(t, writeback.Result{Files: 1, Bytes: 4096}, r)
}
