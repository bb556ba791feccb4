package jni

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/pool"
)

func TestPoolStatsArrayLayoutMatchesAPIMD(t *testing.T) {
	got := poolStatsArray(pool.UnifiedStats{
		Reserved: 1, Held: 2, Slack: 3, Overcommit: 4, Peak: 5, AcquireCalls: 6, ReleaseCalls: 7,
		ShortGrants: 8, ReclaimRequests: 9, ReclaimedBytes: 10, SpillerFailures: 11, LateReleases: 12,
		LateReleaseBytes: 99, OverGrants: 99, UpstreamErrors: 99, LateGrows: 99,
	})
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, got)
	assert.Len(t, got, StatCount)
}

func TestProcessStatsArrayLayoutMatchesAPIMD(t *testing.T) {
	got := ProcessStats{
		LiveTasks: 1, Reserved: 2, Held: 3, Slack: 4, Overcommit: 5, Peak: 6, UpstreamCalls: 7,
		SpillRequests: 8, SpillBytesFreed: 9, LateReleases: 10, Leaks: 11, LeakedBytes: 12,
	}.array()
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, got)
	assert.Len(t, got, PStatCount)
}

// TestSharedConstantsMatchNativeBridgeJava reads the other copy of the
// constants (NativeBridge.java) and checks every one against ours, so that
// the two sides cannot drift apart silently.
func TestSharedConstantsMatchNativeBridgeJava(t *testing.T) {
	src, err := os.ReadFile("../spark/src/main/java/org/nativepool/spark/NativeBridge.java")
	if os.IsNotExist(err) {
		t.Skip("spark/ (the Java module) not present")
	}
	require.NoError(t, err)
	java := map[string]int{}
	for _, m := range regexp.MustCompile(`static final int ((?:P?STAT|KIND)_[A-Z_]+) = (\d+);`).FindAllStringSubmatch(string(src), -1) {
		v, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		java[m[1]] = v
	}
	ours := map[string]int{
		"KIND_FAIR_UNIFIED": KindFairUnified, "KIND_GREEDY_UNIFIED": KindGreedyUnified,
		"STAT_RESERVED": StatReserved, "STAT_HELD": StatHeld, "STAT_SLACK": StatSlack,
		"STAT_OVERCOMMIT": StatOvercommit, "STAT_PEAK": StatPeak, "STAT_ACQUIRE_CALLS": StatAcquireCalls,
		"STAT_RELEASE_CALLS": StatReleaseCalls, "STAT_SHORT_GRANTS": StatShortGrants,
		"STAT_SPILL_REQUESTS": StatSpillRequests, "STAT_SPILL_BYTES_FREED": StatSpillBytesFreed,
		"STAT_SPILLER_FAILURES": StatSpillerFailures, "STAT_LATE_RELEASES": StatLateReleases,
		"STAT_COUNT":       StatCount,
		"PSTAT_LIVE_TASKS": PStatLiveTasks, "PSTAT_RESERVED": PStatReserved, "PSTAT_HELD": PStatHeld,
		"PSTAT_SLACK": PStatSlack, "PSTAT_OVERCOMMIT": PStatOvercommit, "PSTAT_PEAK": PStatPeak,
		"PSTAT_UPSTREAM_CALLS": PStatUpstreamCalls, "PSTAT_SPILL_REQUESTS": PStatSpillRequests,
		"PSTAT_SPILL_BYTES_FREED": PStatSpillBytesFreed, "PSTAT_LATE_RELEASES": PStatLateReleases,
		"PSTAT_LEAKS": PStatLeaks, "PSTAT_LEAKED_BYTES": PStatLeakedBytes, "PSTAT_COUNT": PStatCount,
	}
	assert.Equal(t, ours, java)
}
