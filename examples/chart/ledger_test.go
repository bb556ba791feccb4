package main

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ledgerCSV has three resident parts, one of them tiny, an "other" column,
// a negative unexplained remainder in its last row, and one accounting
// column. Each row's parts plus unexplained sum to its RSS.
const ledgerCSV = `t_ms,rss,jvm.heap.committed,go.heapInUse,go.stacks,other,unexplained,acct:native.reserved
0,200000000,100000000,50000000,100000,0,49900000,0
250,300000000,100000000,150000000,200000,1000000,48800000,67108864
500,240000000,100000000,140000000,100000,0,-100000,33554432
`

func readTestLedger(t *testing.T) *ledger {
	t.Helper()
	l, err := readLedger(strings.NewReader(ledgerCSV))
	require.NoError(t, err)
	return l
}

func names(ss []series) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.name)
	}
	return out
}

func TestReadLedgerSplitsColumnsIntoPartsUnexplainedAndAccounting(t *testing.T) {
	l := readTestLedger(t)
	assert.Equal(t, []float64{0, 0.25, 0.5}, l.t)
	assert.Equal(t, []float64{200000000, 300000000, 240000000}, l.rss)
	assert.Equal(t, []string{"jvm.heap.committed", "go.heapInUse", "go.stacks", "other"}, names(l.parts))
	assert.Equal(t, []float64{49900000, 48800000, -100000}, l.unexplained)
	assert.Equal(t, []string{"native.reserved"}, names(l.accounting))
	assert.Equal(t, []float64{0, 67108864, 33554432}, l.accounting[0].values)
}

// TestMergeSmallFoldsPartsBelowTheThresholdIntoOtherKeepingTheSums: go.stacks
// never reaches 2% of the peak RSS, so it joins "other", which stays last.
func TestMergeSmallFoldsPartsBelowTheThresholdIntoOtherKeepingTheSums(t *testing.T) {
	l := readTestLedger(t)
	l.mergeSmall(0.02, 0)
	assert.Equal(t, []string{"jvm.heap.committed", "go.heapInUse", "other"}, names(l.parts))
	assert.Equal(t, []string{"go.stacks"}, l.merged)
	assert.Equal(t, []float64{100000, 1200000, 100000}, l.parts[2].values)
	for i := range l.t {
		sum := l.unexplained[i]
		for _, p := range l.parts {
			sum += p.values[i]
		}
		assert.Equal(t, l.rss[i], sum, "sample %d", i)
	}
}

func TestMergeSmallWithoutSmallPartsOrOtherColumnAddsNoOther(t *testing.T) {
	l, err := readLedger(strings.NewReader("t_ms,rss,a,unexplained\n0,10,8,2\n"))
	require.NoError(t, err)
	l.mergeSmall(0.02, 0)
	assert.Equal(t, []string{"a"}, names(l.parts))
}

// TestMergeSmallGroupsSmallPartsByOwnerWhenTheGroupIsVisible: go.a and go.b
// are each below 2% of the chart's height (the peak RSS less the floor), but
// together above it, so they become one band at go.a's place; jvm.x stays
// too small even as a group and goes to other.
func TestMergeSmallGroupsSmallPartsByOwnerWhenTheGroupIsVisible(t *testing.T) {
	l, err := readLedger(strings.NewReader("t_ms,rss,big,go.a,jvm.x,go.b,unexplained\n" +
		"0,1000,900,15,5,15,65\n"))
	require.NoError(t, err)
	l.mergeSmall(0.02, 0)
	assert.Equal(t, []string{"big", "go.* (2 parts)", "other"}, names(l.parts))
	assert.Equal(t, []float64{30}, l.parts[1].values)
	assert.Equal(t, []string{"jvm.x"}, l.merged)
	assert.Equal(t, []float64{5}, l.parts[2].values)
}

// TestAxisFloorCutsABottomBandAboveHalfThePeakRSS: a 1 GiB heap under a
// 1.4 GiB RSS starts the axis at 900 MiB; a small bottom band keeps it at 0.
func TestAxisFloorCutsABottomBandAboveHalfThePeakRSS(t *testing.T) {
	const mib = 1 << 20
	l := &ledger{rss: []float64{1400 * mib}, parts: []series{{name: "heap", values: []float64{1024 * mib}}}}
	assert.Equal(t, float64(900*mib), l.axisFloor())
	l.parts[0].values[0] = 800 * mib
	assert.Equal(t, float64(700*mib), l.axisFloor())
	l.parts[0].values[0] = 100 * mib
	assert.Equal(t, 0.0, l.axisFloor())
}

// TestRenderStackedWithAHeapBandAddsASecondPanelFromZero: where the bottom
// band dwarfs the rest (a pre-touched heap), the ledger chart gets a second
// panel without it, its axis from 0, so that native memory is legible: the
// image is 9 inches high instead of 5.5.
func TestRenderStackedWithAHeapBandAddsASecondPanelFromZero(t *testing.T) {
	l := readTestLedger(t)
	l.mergeSmall(0.02, 90<<20)
	out := filepath.Join(t.TempDir(), "ledger.png")
	require.NoError(t, renderStacked(l, 90<<20, "two panels", out))
	img := decodePNG(t, out)
	assert.Equal(t, 960, img.Bounds().Dx())
	assert.Equal(t, 864, img.Bounds().Dy())
	require.NoError(t, renderStacked(l, 0, "one panel", out))
	assert.Equal(t, 528, decodePNG(t, out).Bounds().Dy())
}

// TestReadLedgerRejectsBadInput checks the whole error texts.
func TestReadLedgerRejectsBadInput(t *testing.T) {
	tests := []struct{ name, csv, want string }{
		{"missing rss", "t_ms,a,unexplained\n0,1,2\n", `column "rss" missing from header [t_ms a unexplained]`},
		{"bad number", "t_ms,rss,a,unexplained\n0,10,x,2\n", `line 2: a: strconv.ParseFloat: parsing "x": invalid syntax`},
		{"short row", "t_ms,rss,a,unexplained\n0,10,8\n", "record on line 2: wrong number of fields"},
		{"no samples", "t_ms,rss,unexplained\n", "no samples after the header"},
		{"empty", "", "read header: EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readLedger(strings.NewReader(tc.csv))
			assert.EqualError(t, err, tc.want)
		})
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	return img
}

// TestDrawChartDrawsALedgerCSVAsAStackedChart: a header with an unexplained
// column gets the stacked chart (10×5.5 inches at 96 dpi), whose bands fill
// many pixels in colour; a samples CSV still gets the line chart (8×4.5).
func TestDrawChartDrawsALedgerCSVAsAStackedChart(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "ledger.csv")
	require.NoError(t, os.WriteFile(in, []byte(ledgerCSV), 0o644))
	out := filepath.Join(dir, "ledger.png")
	require.NoError(t, drawChart(in, out, "ledger", "", 0.02))
	img := decodePNG(t, out)
	assert.Equal(t, 960, img.Bounds().Dx())
	assert.Equal(t, 528, img.Bounds().Dy())
	coloured := 0
	for y := 0; y < img.Bounds().Dy(); y += 2 {
		for x := 0; x < img.Bounds().Dx(); x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			if max(r, g, b)-min(r, g, b) > 0x2000 {
				coloured++
			}
		}
	}
	assert.Greater(t, coloured, 5000, "the bands are filled")

	in = filepath.Join(dir, "samples.csv")
	require.NoError(t, os.WriteFile(in, []byte(sampleCSV), 0o644))
	out = filepath.Join(dir, "chart.png")
	require.NoError(t, drawChart(in, out, "samples", "", 0.02))
	assert.Equal(t, 768, decodePNG(t, out).Bounds().Dx())
}
