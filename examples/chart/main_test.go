package main

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sampleCSV = `t_ms,reserved,allocated,rss,held
0,131072,131072,10145792,1048576
50,3276800,3276800,17494016,4194304
100,7077888,7077888,22609920,7340032
150,1048576,1048576,15000000,2097152
`

// TestRenderWritesNonEmptyPNGOfTheRequestedSize: a small CSV becomes a
// decodable PNG, 8×4.5 inches at plot's default 96 dpi, with more than one
// colour (lines were drawn, not only the background).
func TestRenderWritesNonEmptyPNGOfTheRequestedSize(t *testing.T) {
	s, err := readSamples(strings.NewReader(sampleCSV))
	require.NoError(t, err)
	require.Len(t, s.t, 4)
	assert.Equal(t, []float64{0, 0.05, 0.1, 0.15}, s.t)
	require.Len(t, s.series, 4)
	out := filepath.Join(t.TempDir(), "chart.png")
	require.NoError(t, render(s, "test", out, nil))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Equal(t, 768, img.Bounds().Dx())
	assert.Equal(t, 432, img.Bounds().Dy())
	colours := map[[4]uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 3 {
		for x := 0; x < img.Bounds().Dx(); x += 3 {
			r, g, b, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, b, a}] = true
		}
	}
	assert.Greater(t, len(colours), 4, "the image has lines, not just a background")
}

// TestReadSamplesRejectsBadInput checks the whole error texts.
func TestReadSamplesRejectsBadInput(t *testing.T) {
	tests := []struct{ name, csv, want string }{
		{"missing column", "t_ms,reserved,allocated\n0,1,2\n", `column "rss" missing from header [t_ms reserved allocated]`},
		{"bad number", "t_ms,reserved,allocated,rss\n0,1,x,3\n", `line 2: allocated: strconv.ParseFloat: parsing "x": invalid syntax`},
		{"no samples", "t_ms,reserved,allocated,rss\n", "no samples after the header"},
		{"empty", "", "read header: EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readSamples(strings.NewReader(tc.csv))
			assert.EqualError(t, err, tc.want)
		})
	}
}

// TestReadSamplesWithoutHeldDrawsThreeSeries: held is optional.
func TestReadSamplesWithoutHeldDrawsThreeSeries(t *testing.T) {
	s, err := readSamples(strings.NewReader("rss,t_ms,allocated,reserved\n5,0,1,2\n"))
	require.NoError(t, err)
	names := []string{}
	for _, sr := range s.series {
		names = append(names, sr.name)
	}
	assert.Equal(t, []string{"rss", "reserved", "allocated"}, names)
	require.NoError(t, render(s, "no held", filepath.Join(t.TempDir(), "c.png"), nil))
}

func TestLegendFlagParsesColumnLabelPairsAndRejectsOthers(t *testing.T) {
	got, err := parseLabels("reserved=off-heap reserved (Spark);held=held from Spark")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"reserved": "off-heap reserved (Spark)", "held": "held from Spark"}, got)
	_, err = parseLabels("reserved")
	require.EqualError(t, err, `-legend: "reserved" is not col=label`)
}

func TestNiceTicksAreMultiplesOfOneTwoOrFive(t *testing.T) {
	var labels []string
	for _, tk := range (niceTicks{}).Ticks(0, 19.7) {
		labels = append(labels, tk.Label)
	}
	require.Equal(t, []string{"0", "5", "10", "15"}, labels)
}

func TestNiceTicksLabelDecimalStepsWithoutRoundingNoise(t *testing.T) {
	var labels []string
	for _, tk := range (niceTicks{}).Ticks(0, 0.5) {
		labels = append(labels, tk.Label)
	}
	require.Equal(t, []string{"0.0", "0.1", "0.2", "0.3", "0.4", "0.5"}, labels)
}

// The burst and ballast columns are drawn when some sample is not 0, and
// left out when every sample is.
func TestBurstAndBallastAreDrawnOnlyWhenTheyHappened(t *testing.T) {
	quiet := "t_ms,reserved,allocated,rss,held,burst,ballast\n0,1,1,1,1,0,0\n50,2,2,2,2,0,0\n"
	s, err := readSamples(strings.NewReader(quiet))
	require.NoError(t, err)
	var names []string
	for _, x := range s.series {
		names = append(names, x.name)
	}
	assert.Equal(t, []string{"rss", "held", "reserved", "allocated"}, names)

	burst := "t_ms,reserved,allocated,rss,held,burst,ballast\n0,1,1,1,1,0,0\n50,2,2,2,2,4194304,2097152\n"
	s, err = readSamples(strings.NewReader(burst))
	require.NoError(t, err)
	names = names[:0]
	for _, x := range s.series {
		names = append(names, x.name)
	}
	assert.Equal(t, []string{"rss", "held", "reserved", "allocated", "burst", "ballast"}, names)
}

// TestFlatPhaseFindsTheLongestLevelRunOfReserved: reserved at one level for
// most of a run is the phase the chart labels; a run that only rises and
// falls has none.
func TestFlatPhaseFindsTheLongestLevelRunOfReserved(t *testing.T) {
	s := &samples{t: []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}
	s.series = []series{{name: "reserved", values: []float64{1, 30, 60, 47, 47, 47.2, 47, 47, 24, 0}}}
	for i := range s.series[0].values {
		s.series[0].values[i] *= 1 << 20
	}
	from, to, ok := flatPhase(s)
	require.True(t, ok)
	assert.Equal(t, []int{3, 7}, []int{from, to})
	s.series[0].values = []float64{0, 10 << 20, 20 << 20, 30 << 20, 40 << 20, 50 << 20, 40 << 20, 30 << 20, 20 << 20, 10 << 20}
	_, _, ok = flatPhase(s)
	assert.False(t, ok, "no level run")
}

// TestRenderLabelsTheFlatPhase: a chart with a flat phase of reserved is
// drawn with its label (the PNG is written; the label's words are
// labelFlatPhase's).
func TestRenderLabelsTheFlatPhase(t *testing.T) {
	csv := "t_ms,reserved,allocated,rss,held\n"
	for i, r := range []int{1, 30, 60, 47, 47, 47, 47, 47, 24, 0} {
		csv += fmt.Sprintf("%d,%d,%d,%d,%d\n", i*1000, r<<20, 1<<20, (r+5)<<20, 8<<20)
	}
	s, err := readSamples(strings.NewReader(csv))
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "chart.png")
	require.NoError(t, render(s, "flat", out, nil))
	assert.Equal(t, 768, decodePNG(t, out).Bounds().Dx())
}
