package cdatacheck

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// unmappedAddr is an address no process maps on linux/amd64 in practice
// (16 TiB, between the heap and the mmap area); noAccessPage returns one
// that is certainly mapped without access.
const unmappedAddr = uintptr(1) << 44

func noAccessPage(t *testing.T, prot int) uintptr {
	t.Helper()
	b, err := unix.Mmap(-1, 0, 4096, prot, unix.MAP_PRIVATE|unix.MAP_ANON)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return uintptr(unsafe.Pointer(&b[0]))
}

func TestLayoutOfKnowsTheBuffersAndChildrenOfEachFormat(t *testing.T) {
	cases := []struct {
		format   string
		kind     layoutKind
		width    int64
		buffers  string
		children int
	}{
		{"n", kindNull, 0, "0", 0},
		{"b", kindBits, 0, "2", 0},
		{"c", kindFixed, 1, "2", 0},
		{"e", kindFixed, 2, "2", 0},
		{"i", kindFixed, 4, "2", 0},
		{"g", kindFixed, 8, "2", 0},
		{"tsu:UTC", kindFixed, 8, "2", 0},
		{"tin", kindFixed, 16, "2", 0},
		{"d:38,10", kindFixed, 16, "2", 0},
		{"d:76,10,256", kindFixed, 32, "2", 0},
		{"w:5", kindFixed, 5, "2", 0},
		{"u", kindBinary, 4, "3", 0},
		{"Z", kindBinary, 8, "3", 0},
		{"vu", kindView, 0, "at least 3", 0},
		{"+l", kindList, 4, "2", 1},
		{"+L", kindList, 8, "2", 1},
		{"+m", kindList, 4, "2", 1},
		{"+w:3", kindFixedList, 3, "1", 1},
		{"+s", kindStruct, 0, "1", -1},
		{"+ud:0,1", kindDenseUnion, 0, "2 or 3", 2},
		{"+r", kindRunEnd, 0, "0", 2},
	}
	for _, tc := range cases {
		l, err := layoutOf(tc.format)
		require.NoError(t, err, tc.format)
		assert.Equal(t, tc.kind, l.kind, tc.format)
		assert.Equal(t, tc.width, l.width, tc.format)
		assert.Equal(t, tc.buffers, bufferRange(l), tc.format)
		assert.Equal(t, tc.children, l.children, tc.format)
	}
	for _, bad := range []string{"", "x", "w:0", "w:-1", "d:1", "d:1,2,3,4", "d:10,2,100", "d:x,y", "+w:x", "+w:0", "tsx:", "+us:0,0", "+ud:128", "+us:a"} {
		_, err := layoutOf(bad)
		assert.Error(t, err, bad)
	}
}

func TestReadMemAnswersUnreadableInsteadOfFaulting(t *testing.T) {
	none := noAccessPage(t, unix.PROT_NONE)
	var buf [8]byte
	require.ErrorIs(t, readMem(none, buf[:]), errUnreadable)
	require.ErrorIs(t, readMem(unmappedAddr, buf[:]), errUnreadable)
	require.ErrorIs(t, readMemPipe(none, buf[:]), errUnreadable)
	require.ErrorIs(t, probeRange("r", none-4096, 8192), errUnreadable)
	x := uint64(0x0102030405060708)
	require.NoError(t, readMemPipe(uintptr(unsafe.Pointer(&x)), buf[:]))
	assert.Equal(t, byte(8), buf[0])
	require.NoError(t, probeRange("r", uintptr(unsafe.Pointer(&x)), 8))
}
