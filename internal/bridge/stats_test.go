package bridge

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/guard"
	"github.com/nativepool/nativepool/pool"
)

func TestPoolStatsArrayLayoutMatchesAPIMD(t *testing.T) {
	got := poolStatsArray(pool.UnifiedStats{
		Reserved: 1, Held: 2, Slack: 3, Overcommit: 4, Peak: 5, AcquireCalls: 6, ReleaseCalls: 7,
		ShortGrants: 8, ReclaimRequests: 9, ReclaimedBytes: 10, SpillerFailures: 11, LateReleases: 12,
		ReclaimReentries: 13, LateReleaseBytes: 99, OverGrants: 99, UpstreamErrors: 99, LateGrows: 99,
	})
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, got)
	assert.Len(t, got, StatCount)
}

func TestProcessStatsArrayLayoutMatchesAPIMD(t *testing.T) {
	got := ProcessStats{
		LiveTasks: 1, Reserved: 2, Held: 3, Slack: 4, Overcommit: 5, Peak: 6, UpstreamCalls: 7,
		SpillRequests: 8, SpillBytesFreed: 9, LateReleases: 10, Leaks: 11, LeakedBytes: 12,
		GoMemoryLimit: 13, GoBaseline: 14, GoMapped: 15, GoPeak: 16, GoHeapReturns: 17,
		GoHeapReturnedBytes: 18, VmHWM: 19, CgroupPeak: 20, MallocMmapThreshold: 21,
		MallocRetained: 22, GoHeapInUse: 23, GoHeapIdle: 24, GoStacks: 25, GoGCMeta: 26, GoOther: 27,
		LeakedResident: 28, SpillReentries: 29,
		Guard: guard.Stats{
			Limit: 30, Unreclaimable: 31, Headroom: 32, Reserve: 33, Episodes: 35, Spilled: 36,
			Released: 37, LastReaction: 38 * time.Microsecond, AdmissionWaits: 39, AdmittedShort: 40, Wakes: 41,
			RefusedNow: 42, OffHeapBallast: 43, OffHeapTaken: 44, OffHeapGathered: 45,
		},
		Ballast: 34,
	}.Array()
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
		30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45}, got)
	assert.Len(t, got, PStatCount)
}

// apiMDIntro is the line of jni/API.md that introduces each stats array's
// list.
var apiMDIntro = map[string]string{
	"poolStats0":         "Pool stats (`poolStats0`)",
	"processStats0":      "Process stats (`processStats0`)",
	"arrowStats0":        "Reservation Arrow stats (`arrowStats0`)",
	"processArrowStats0": "Process Arrow stats (`processArrowStats0`)",
}

// names returns the names of a table's rows, in index order.
func names(t StatTable) []string {
	out := make([]string, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = r.Name
	}
	return out
}

// TestStatTablesDescribeTheArraysTheNativesReturn: StatTables, which the
// Java enums are generated from, has each array's rows in index order,
// with the gauges where the plugin has them.
func TestStatTablesDescribeTheArraysTheNativesReturn(t *testing.T) {
	tabs := StatTables()
	require.Len(t, tabs, 4)
	lengths := []int{StatCount, PStatCount, ArrowStatCount, ArrowPStatCount}
	for i, tab := range tabs {
		assert.Len(t, tab.Rows, lengths[i], tab.Native)
		assert.Regexp(t, `^[A-Z][A-Za-z]*Stat$`, tab.Enum)
		assert.Regexp(t, `^[a-zA-Z]+Fields in internal/bridge/[a-z_]+\.go$`, tab.Source)
		for _, r := range tab.Rows {
			if tab.Gauges {
				continue
			}
			assert.Empty(t, r.Gauge, "%s.%s: only tables with gauges name them", tab.Enum, r.Name)
		}
	}
	assert.Equal(t, []string{"poolStats0", "processStats0", "arrowStats0", "processArrowStats0"},
		[]string{tabs[0].Native, tabs[1].Native, tabs[2].Native, tabs[3].Native})
	assert.Equal(t, "RESERVED", tabs[0].Rows[StatReserved].Name)
	assert.Equal(t, StatRow{Name: "HELD", Gauge: "heldFromSpark", Doc: "Bytes held from Spark, open pools."}, tabs[1].Rows[PStatHeld])
	assert.Equal(t, "sparkSpillRequests", tabs[1].Rows[PStatSpillRequests].Gauge)
	assert.Equal(t, "nativeAllocated", tabs[3].Rows[ArrowPStatAllocated].Gauge)
	assert.Equal(t, "rssBytes", tabs[3].Rows[ArrowPStatRSS].Gauge)
	assert.Empty(t, tabs[3].Rows[ArrowPStatGoRuntime].Gauge)
	for _, r := range tabs[1].Rows {
		assert.NotEmpty(t, r.Gauge, "every process figure is a gauge: %s", r.Name)
	}
	tabs[0].Rows[0].Name = "CHANGED"
	assert.Equal(t, "RESERVED", StatTables()[0].Rows[0].Name, "a copy each time")
}

func TestStatTablesHaveEveryRowFilled(t *testing.T) {
	check := func(name string, i int, doc string, get bool) {
		assert.Regexp(t, `^[A-Z][A-Z0-9_]*$`, name, "row %d", i)
		assert.Regexp(t, `^[A-Z0-9].*\.$`, doc, "row %d (%s): its doc is a sentence (the Java constant's Javadoc)", i, name)
		assert.True(t, get, "row %d (%s) has no getter", i, name)
	}
	for i, f := range poolStatFields {
		check(f.name, i, f.doc, f.get != nil)
		assert.Empty(t, f.gauge, f.name)
	}
	for i, f := range processStatFields {
		check(f.name, i, f.doc, f.get != nil)
	}
	for i, f := range arrowStatFields {
		check(f.name, i, f.doc, f.get != nil)
	}
	for i, f := range processArrowStatFields {
		check(f.name, i, f.doc, f.get != nil)
	}
}

// TestStatTablesMatchAPIMD checks the lists of jni/API.md ("0 RESERVED, 1
// HELD (from Spark), …; length 12.") against the Go tables.
func TestStatTablesMatchAPIMD(t *testing.T) {
	src, err := os.ReadFile("../../jni/API.md")
	require.NoError(t, err)
	doc := string(src)
	item := regexp.MustCompile("(?:`|, )(\\d+) ([A-Z][A-Z0-9_]*)")
	length := regexp.MustCompile("`; length (\\d+)")
	for _, tab := range StatTables() {
		t.Run(tab.Native, func(t *testing.T) {
			intro := apiMDIntro[tab.Native]
			i := strings.Index(doc, intro)
			require.GreaterOrEqual(t, i, 0, "API.md has no %q", intro)
			para := doc[i:]
			para = para[:strings.Index(para, "\n\n")]
			var got []string
			for j, m := range item.FindAllStringSubmatch(para, -1) {
				assert.Equal(t, strconv.Itoa(j), m[1], "index of %s", m[2])
				got = append(got, m[2])
			}
			assert.Equal(t, names(tab), got)
			n := length.FindStringSubmatch(para)
			require.NotNil(t, n, "no length in %q", para)
			assert.Equal(t, strconv.Itoa(len(tab.Rows)), n[1])
		})
	}
}
