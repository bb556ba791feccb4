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
