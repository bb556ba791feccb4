package bridge

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	}.Array()
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29}, got)
	assert.Len(t, got, PStatCount)
}

// TestSharedConstantsMatchNativeBridgeJava reads the other copy of the
// constants (NativeBridge.java) and checks every one against ours, so that
// the two sides cannot drift apart silently.
func TestSharedConstantsMatchNativeBridgeJava(t *testing.T) {
	src, err := os.ReadFile("../../spark/src/main/java/org/nativepool/spark/NativeBridge.java")
	if os.IsNotExist(err) {
		t.Skip("spark/ (the Java module) not present")
	}
	require.NoError(t, err)
	java := map[string]int{}
	for _, m := range regexp.MustCompile(`static final int ([A-Z][A-Z_]+) = (\d+);`).FindAllStringSubmatch(string(src), -1) {
		v, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		java[m[1]] = v
	}
	ours := map[string]int{"KIND_FAIR_UNIFIED": KindFairUnified, "KIND_GREEDY_UNIFIED": KindGreedyUnified}
	assert.Equal(t, ours, java, "NativeBridge.java declares the pool kinds and no other int constant")
}

// statTable is one stats array's declaration as the checks below see it.
type statTable struct {
	native string   // the JNI native that returns the array
	names  []string // the table's names, in index order
	java   string   // the Java enum that mirrors the table
	apiMD  string   // the line of jni/API.md that introduces its list
}

func names[S any](fields []statField[S]) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	return out
}

func statTables() []statTable {
	const dir = "../../spark/src/main/java/org/nativepool/spark/"
	return []statTable{
		{"poolStats0", names(poolStatFields[:]), dir + "PoolStat.java", "Pool stats (`poolStats0`)"},
		{"processStats0", names(processStatFields[:]), dir + "ProcessStat.java", "Process stats (`processStats0`)"},
		{"arrowStats0", names(arrowStatFields[:]), dir + "arrow/ArrowStat.java", "Reservation Arrow stats (`arrowStats0`)"},
		{"processArrowStats0", names(processArrowStatFields[:]), dir + "arrow/ArrowProcessStat.java", "Process Arrow stats (`processArrowStats0`)"},
	}
}

func TestStatTablesHaveEveryRowFilled(t *testing.T) {
	check := func(name string, i int, doc string, get bool) {
		assert.Regexp(t, `^[A-Z][A-Z0-9_]*$`, name, "row %d", i)
		assert.NotEmpty(t, doc, "row %d (%s) has no doc", i, name)
		assert.True(t, get, "row %d (%s) has no getter", i, name)
	}
	for i, f := range poolStatFields {
		check(f.name, i, f.doc, f.get != nil)
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

// javaEnumConstant matches a constant of the stats enums: two spaces of
// indent, the name, optional constructor arguments, then ',' or ';'.
var javaEnumConstant = regexp.MustCompile(`(?m)^  ([A-Z][A-Z0-9_]*)(?:\(.*\))?[,;]$`)

// TestStatTablesMatchJavaEnums reads each Java stats enum and checks its
// constants, in order, against the Go table: the enum's ordinal is the
// array index.
func TestStatTablesMatchJavaEnums(t *testing.T) {
	for _, tab := range statTables() {
		t.Run(tab.native, func(t *testing.T) {
			src, err := os.ReadFile(tab.java)
			if os.IsNotExist(err) {
				t.Skip("spark/ (the Java module) not present")
			}
			require.NoError(t, err)
			var java []string
			for _, m := range javaEnumConstant.FindAllStringSubmatch(string(src), -1) {
				java = append(java, m[1])
			}
			assert.Equal(t, tab.names, java, tab.java)
		})
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
	for _, tab := range statTables() {
		t.Run(tab.native, func(t *testing.T) {
			i := strings.Index(doc, tab.apiMD)
			require.GreaterOrEqual(t, i, 0, "API.md has no %q", tab.apiMD)
			para := doc[i:]
			para = para[:strings.Index(para, "\n\n")]
			var got []string
			for j, m := range item.FindAllStringSubmatch(para, -1) {
				assert.Equal(t, strconv.Itoa(j), m[1], "index of %s", m[2])
				got = append(got, m[2])
			}
			assert.Equal(t, tab.names, got)
			n := length.FindStringSubmatch(para)
			require.NotNil(t, n, "no length in %q", para)
			assert.Equal(t, strconv.Itoa(len(tab.names)), n[1])
		})
	}
}
