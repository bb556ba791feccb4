package main

// The ledger chart: the executor memory ledger's CSV (the Spark demo's
// ledger.csv) drawn as stacked areas, one band per resident part, the
// unexplained remainder on top and the RSS line over them.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Column names of a ledger CSV. Every other column is a resident part,
// stacked in header order, except those that start with accountingPrefix.
const (
	colTime        = "t_ms"
	colRSS         = "rss"
	colUnexplained = "unexplained"
	colOther       = "other"
	// accountingPrefix marks a column that is bookkeeping, not memory (the
	// native pools' reservations): drawn as a dashed line, never stacked.
	accountingPrefix = "acct:"
)

// ledger is a parsed ledger CSV: sample times in seconds, RSS, the resident
// parts (bytes, header order), the unexplained remainder (RSS less the
// parts' sum; may be negative) and the accounting columns.
type ledger struct {
	t           []float64
	rss         []float64
	parts       []series
	unexplained []float64
	accounting  []series
	// merged lists the parts mergeSmall folded into "other".
	merged []string
}

// isLedgerHeader reports whether a CSV header is a ledger's: it has an
// unexplained column. main draws such a file as a stacked chart.
func isLedgerHeader(header []string) bool {
	return slices.Contains(header, colUnexplained)
}

// readLedger parses a ledger CSV. t_ms, rss and unexplained are required.
// It fails on a missing column, a malformed number, a short row or no
// samples.
func readLedger(r io.Reader) (*ledger, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	for _, need := range []string{colTime, colRSS, colUnexplained} {
		if !slices.Contains(header, need) {
			return nil, fmt.Errorf("column %q missing from header %v", need, header)
		}
	}
	l := &ledger{}
	// Where each column's values go.
	dest := make([]*[]float64, len(header))
	for _, h := range header {
		switch {
		case h == colTime || h == colRSS || h == colUnexplained:
		case strings.HasPrefix(h, accountingPrefix):
			l.accounting = append(l.accounting, series{name: strings.TrimPrefix(h, accountingPrefix)})
		default:
			l.parts = append(l.parts, series{name: h})
		}
	}
	np, na := 0, 0
	for i, h := range header {
		switch {
		case h == colTime:
			dest[i] = &l.t
		case h == colRSS:
			dest[i] = &l.rss
		case h == colUnexplained:
			dest[i] = &l.unexplained
		case strings.HasPrefix(h, accountingPrefix):
			dest[i] = &l.accounting[na].values
			na++
		default:
			dest[i] = &l.parts[np].values
			np++
		}
	}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		for i, field := range rec {
			v, err := strconv.ParseFloat(field, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", line, header[i], err)
			}
			if header[i] == colTime {
				v /= 1000
			}
			*dest[i] = append(*dest[i], v)
		}
	}
	if len(l.t) == 0 {
		return nil, errors.New("no samples after the header")
	}
	return l, nil
}

// axisFloor is where the stacked chart's MiB axis starts: 0, unless the
// bottom part never falls below half the peak RSS (a pre-touched JVM heap
// of fixed size), in which case most of that band is cut so that the parts
// above it get the chart's height: 90% of the band's lowest value, rounded
// down to a power of ten (921 MiB → 900 MiB). In bytes.
func (l *ledger) axisFloor() float64 {
	if len(l.parts) == 0 {
		return 0
	}
	low := slices.Min(l.parts[0].values)
	if low < 0.5*slices.Max(l.rss) || low <= 0 {
		return 0
	}
	v := 0.9 * low / (1 << 20)
	step := math.Pow(10, math.Floor(math.Log10(v)))
	return math.Floor(v/step) * step * (1 << 20)
}

// mergeSmall keeps the legend to parts one can see: a part that never
// exceeds frac × the chart's height (peak RSS less the axis floor) joins the
// other small parts of its owner (the name up to its first dot: go, jvm,
// netty …), and the group becomes one band, named like "go.* (4 parts)", at
// its first part's place; a group that is still below that height goes to
// the "other" band (made if absent, and kept last), with the CSV's own other
// column. The sums are unchanged.
func (l *ledger) mergeSmall(frac, floor float64) {
	limit := frac * (slices.Max(l.rss) - floor)
	type group struct {
		owner  string
		names  []string
		values []float64
	}
	var out []*series
	groups := map[string]*group{}
	var order []*group
	slot := map[*group]int{} // index in out of the group's band
	other := make([]float64, len(l.t))
	hasOther := false
	for _, p := range l.parts {
		if p.name == colOther {
			hasOther = true
			addTo(other, p.values)
			continue
		}
		if slices.Max(p.values) >= limit {
			out = append(out, &series{name: p.name, values: p.values})
			continue
		}
		owner, _, _ := strings.Cut(p.name, ".")
		g := groups[owner]
		if g == nil {
			g = &group{owner: owner, values: make([]float64, len(l.t))}
			groups[owner] = g
			order = append(order, g)
			slot[g] = len(out)
			out = append(out, nil) // the group's place, filled below
		}
		g.names = append(g.names, p.name)
		addTo(g.values, p.values)
	}
	for _, g := range order {
		if slices.Max(g.values) < limit {
			l.merged = append(l.merged, g.names...)
			addTo(other, g.values)
			continue
		}
		name := g.names[0]
		if len(g.names) > 1 {
			name = fmt.Sprintf("%s.* (%d parts)", g.owner, len(g.names))
		}
		out[slot[g]] = &series{name: name, values: g.values}
	}
	var kept []series
	for _, p := range out {
		if p != nil {
			kept = append(kept, *p)
		}
	}
	if hasOther || len(l.merged) > 0 {
		kept = append(kept, series{name: colOther, values: other})
	}
	l.parts = kept
}

func addTo(sum, v []float64) {
	for i := range sum {
		sum[i] += v[i]
	}
}

// bandColors are the resident parts' fills, bottom up; the unexplained
// band is grey.
var bandColors = []color.RGBA{
	{R: 66, G: 114, B: 196, A: 255},
	{R: 120, G: 170, B: 230, A: 255},
	{R: 237, G: 125, B: 49, A: 255},
	{R: 250, G: 190, B: 120, A: 255},
	{R: 84, G: 160, B: 84, A: 255},
	{R: 160, G: 215, B: 140, A: 255},
	{R: 150, G: 100, B: 190, A: 255},
	{R: 205, G: 170, B: 225, A: 255},
	{R: 190, G: 160, B: 60, A: 255},
	{R: 120, G: 200, B: 200, A: 255},
	{R: 200, G: 110, B: 140, A: 255},
	{R: 140, G: 110, B: 90, A: 255},
}

// renderStacked draws the ledger as stacked areas (MiB over seconds, the
// axis starting at floor bytes, see axisFloor): the resident parts bottom
// up in header order, the unexplained remainder as the top band (a
// negative remainder is drawn as 0, and the legend says in how many
// samples), the RSS line over them, and the accounting columns as dashed
// lines that are not stacked (one that stays below the floor is named in
// the legend with its peak instead). The legend sits right of the plot, top
// band first. It saves a PNG of 10×5.5 inches.
func renderStacked(l *ledger, floor float64, title, out string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "MiB"
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}

	const mib = 1 << 20
	n := len(l.t)
	lower := make([]float64, n)
	type entry struct {
		label string
		thumb plot.Thumbnailer
	}
	var legend []entry // bottom up
	band := func(name string, v []float64, c color.Color) error {
		upper := make([]float64, n)
		ring := make(plotter.XYs, 0, 2*n)
		// Clamped to the floor: the cut part of a band is not drawn.
		for i := range n {
			upper[i] = lower[i] + max(0, v[i])
			ring = append(ring, plotter.XY{X: l.t[i], Y: max(upper[i], floor) / mib})
		}
		for i := n - 1; i >= 0; i-- {
			ring = append(ring, plotter.XY{X: l.t[i], Y: max(lower[i], floor) / mib})
		}
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			return fmt.Errorf("band %s: %w", name, err)
		}
		poly.Color = c
		poly.LineStyle.Width = 0
		p.Add(poly)
		legend = append(legend, entry{name, poly})
		lower = upper
		return nil
	}
	for i, part := range l.parts {
		name := part.name
		if name == colOther && len(l.merged) > 0 {
			name = fmt.Sprintf("other (%d small parts)", len(l.merged))
		}
		if i == 0 && floor > 0 {
			name += fmt.Sprintf(" (cut: the axis starts at %g MiB)", floor/mib)
		}
		if err := band(name, part.values, bandColors[i%len(bandColors)]); err != nil {
			return err
		}
	}
	negative := 0
	for _, v := range l.unexplained {
		if v < 0 {
			negative++
		}
	}
	name := "unexplained (RSS − parts)"
	if negative > 0 {
		name = fmt.Sprintf("unexplained (< 0, drawn as 0, in %d/%d samples)", negative, n)
	}
	if err := band(name, l.unexplained, color.RGBA{R: 200, G: 200, B: 200, A: 255}); err != nil {
		return err
	}
	p.Add(plotter.NewGrid())

	top := slices.Max(lower)
	var lines []entry
	for i, a := range l.accounting {
		peak := slices.Max(a.values)
		if peak <= 0 {
			continue
		}
		if peak <= floor {
			lines = append(lines, entry{fmt.Sprintf("%s (accounting): peak %.1f MiB, below the axis", a.name, peak/mib), nil})
			continue
		}
		ln, err := mibLine(l.t, a.values)
		if err != nil {
			return fmt.Errorf("series %s: %w", a.name, err)
		}
		ln.Color = color.RGBA{R: 30 + uint8(60*i), G: 30, B: 30 + uint8(60*i), A: 255}
		ln.Width = vg.Points(1)
		ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(ln)
		lines = append(lines, entry{a.name + " (accounting, not stacked)", ln})
	}
	rss, err := mibLine(l.t, l.rss)
	if err != nil {
		return fmt.Errorf("series rss: %w", err)
	}
	rss.Color = color.Black
	rss.Width = vg.Points(1.5)
	p.Add(rss)
	top = max(top, slices.Max(l.rss))
	// After every Add, which widens the axes to the data.
	p.Y.Min = floor / mib
	p.Y.Max = max(top/mib*1.05, p.Y.Min+1)

	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.ThumbnailWidth = vg.Points(16)
	leg.Padding = vg.Points(2)
	leg.TextStyle.Font.Size = vg.Points(9)
	leg.Add("RSS (process)", rss)
	for i := len(legend) - 1; i >= 0; i-- {
		leg.Add(legend[i].label, legend[i].thumb)
	}
	for _, e := range lines {
		if e.thumb == nil {
			leg.Add(e.label)
		} else {
			leg.Add(e.label, e.thumb)
		}
	}

	const w, h = 10 * vg.Inch, 5.5 * vg.Inch
	const legendWidth = 3.4 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	leg.Draw(draw.Crop(dc, w-legendWidth+vg.Points(8), 0, 0, -vg.Points(24)))

	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("save %s: %w", out, err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("save %s: %w", out, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save %s: %w", out, err)
	}
	return nil
}

// mibLine is a line of v (bytes) in MiB over t.
func mibLine(t, v []float64) (*plotter.Line, error) {
	pts := make(plotter.XYs, len(t))
	for i := range t {
		pts[i].X, pts[i].Y = t[i], v[i]/(1<<20)
	}
	return plotter.NewLine(pts)
}
