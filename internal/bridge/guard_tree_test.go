package bridge

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/cgroup"
)

// With ProcessTree, as on YARN, a configured limit is held against the
// resident memory of the process tree (cgroup.TreeReader), which holds at
// least the process's own resident pages, and what the guard keeps says so.
func TestConfigureGuardWithProcessTreeHoldsTheLimitAgainstTheTreesResidentMemory(t *testing.T) {
	b, logs := newTestBridge(t)
	src := b.newGuardSource(GuardSettings{Enabled: true, Limit: 1 << 42, ProcessTree: true})
	defer src.close()
	require.NotNil(t, src.tree)
	if src.group == nil { // no cgroup limit here: the tree's figure is what the guard reads
		smp, err := src.Read()
		require.NoError(t, err)
		own, err := cgroup.ProcessResident(os.ReadFile)
		require.NoError(t, err)
		assert.Equal(t, int64(1<<42), smp.Limit)
		assert.GreaterOrEqual(t, smp.Unreclaimable, own, "the tree holds at least this process's anonymous pages")
		assert.Contains(t, src.how(), "process tree")
	}
	require.NoError(t, b.ConfigureGuard(GuardSettings{Enabled: true, Limit: 1 << 42, ProcessTree: true}))
	defer b.StopGuard()
	b.GuardStep()
	assert.Positive(t, b.GuardStats().Unreclaimable)
	assert.NotEmpty(t, logs.lines("pod guard on"))
}
