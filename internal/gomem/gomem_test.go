package gomem

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadReportsMappedBytesOfWhichSomeMayBeReleased(t *testing.T) {
	mapped, released, ok := Read()
	require.True(t, ok)
	assert.Positive(t, mapped)
	assert.GreaterOrEqual(t, released, int64(0))
	assert.LessOrEqual(t, released, mapped)
}

// The classes partition what the runtime holds: their sum is Read's mapped −
// released, read at the same moment (no allocation between the two reads
// changes them by more than a span or so).
func TestReadClassesSumToMappedLessReleased(t *testing.T) {
	c, ok := ReadClasses()
	require.True(t, ok)
	mapped, released, ok := Read()
	require.True(t, ok)
	assert.Positive(t, c.HeapInUse)
	assert.Positive(t, c.Stacks)
	assert.Positive(t, c.GCMeta)
	assert.GreaterOrEqual(t, c.HeapIdle, int64(0))
	assert.InDelta(t, mapped-released, c.Total(), 1<<20)
}
