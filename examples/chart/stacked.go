package main

// The ledger chart: the executor memory ledger (ledger.go) drawn as stacked
// areas, one band per resident part, the unexplained remainder on top and
// the RSS line over them.

import (
	"cmp"
	"fmt"
	"image/color"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// A stackBand is one band of the ledger chart: its legend label, its
// values (bytes) and its fill.
type stackBand struct {
	label  string
	values []float64
	color  color.RGBA
}

// stackBands are the ledger chart's bands, bottom first: the resident parts
// in the ledger's order, each filled with its part's colour (partColor, as
// on the Native Memory page), then the unexplained remainder on top. The
// other band's label says how many small parts it sums, and unexplained's
// in how many samples it was negative (drawn as 0).
func stackBands(l *ledger) []stackBand {
	const mib = 1 << 20
	var bands []stackBand
	for _, part := range l.parts {
		name := part.name
		if name == colOther && len(l.merged) > 0 {
			name = fmt.Sprintf("other (%d small parts)", len(l.merged))
		}
		bands = append(bands, stackBand{name, part.values, rgba(partColor(cmp.Or(part.part, part.name)))})
	}
	negative := 0
	for _, v := range l.unexplained {
		if v < 0 {
			negative++
		}
	}
	name := "unexplained (RSS − parts)"
	if negative > 0 {
		name = fmt.Sprintf("unexplained (< 0, drawn as 0, in %d/%d samples)", negative, len(l.unexplained))
	}
	return append(bands, stackBand{name, l.unexplained, rgba(unexplainedColor)})
}

// renderStacked draws the ledger as stacked areas (MiB over seconds, the
// axis from 0): stackBands, bottom up (a negative remainder is drawn as 0),
// the RSS line over them, and the accounting columns as dashed lines that
// are not stacked. When the bottom band dwarfs the rest (floor > 0, see
// axisFloor: a pre-touched JVM heap), a second panel under the first draws
// the same chart without it, from 0, so that the smaller parts (native
// memory, the Go runtime, the JVM's own) and the accounting lines are
// legible. The legend sits right of the plots: RSS, then the bands top
// first (as the Native Memory page lists them), then the accounting lines.
// It saves a PNG of 10×5.5 inches, or 10×9 with the second panel.
func renderStacked(l *ledger, floor float64, title, out string) error {
	const mib = 1 << 20
	bands := stackBands(l)
	p, legend, err := stackPlot(l, bands, l.rss, title)
	if err != nil {
		return err
	}
	var zoom *plot.Plot
	if floor > 0 && len(bands) > 1 {
		rest := make([]float64, len(l.rss))
		for i := range rest {
			rest[i] = l.rss[i] - max(0, bands[0].values[i])
		}
		low := slices.Min(bands[0].values)
		zoom, _, err = stackPlot(l, bands[1:], rest, fmt.Sprintf("the same without %s (at least %.0f MiB throughout), from 0", bands[0].label, low/mib))
		if err != nil {
			return err
		}
	}

	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.ThumbnailWidth = vg.Points(16)
	leg.Padding = vg.Points(2)
	leg.TextStyle.Font.Size = vg.Points(9)
	for _, e := range legend {
		if e.thumb == nil {
			leg.Add(e.label)
		} else {
			leg.Add(e.label, e.thumb)
		}
	}

	w, h := 10*vg.Inch, 5.5*vg.Inch
	if zoom != nil {
		h = 9 * vg.Inch
	}
	const legendWidth = 3.4 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	plots := draw.Crop(dc, 0, -legendWidth, 0, 0)
	if zoom == nil {
		p.Draw(plots)
	} else {
		split := h * 0.58
		p.Draw(draw.Crop(plots, 0, 0, h-split, 0))
		zoom.Draw(draw.Crop(plots, 0, 0, 0, -split))
	}
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

// A legendEntry is one line of the ledger chart's legend; thumb nil for
// a line of words alone.
type legendEntry struct {
	label string
	thumb plot.Thumbnailer
}

// stackPlot is one panel of the ledger chart, its axis from 0: bands
// stacked bottom up, total as the black line over them, the accounting
// columns dashed. It returns the panel and its legend: the total, the bands
// top first, the accounting lines.
func stackPlot(l *ledger, bands []stackBand, total []float64, title string) (*plot.Plot, []legendEntry, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "MiB"
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}

	const mib = 1 << 20
	n := len(l.t)
	lower := make([]float64, n)
	var stacked []legendEntry // bottom up
	for _, b := range bands {
		upper := make([]float64, n)
		ring := make(plotter.XYs, 0, 2*n)
		for i := range n {
			upper[i] = lower[i] + max(0, b.values[i])
			ring = append(ring, plotter.XY{X: l.t[i], Y: upper[i] / mib})
		}
		for i := n - 1; i >= 0; i-- {
			ring = append(ring, plotter.XY{X: l.t[i], Y: lower[i] / mib})
		}
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			return nil, nil, fmt.Errorf("band %s: %w", b.label, err)
		}
		poly.Color = b.color
		poly.LineStyle.Width = 0
		p.Add(poly)
		stacked = append(stacked, legendEntry{b.label, poly})
		lower = upper
	}
	p.Add(plotter.NewGrid())

	top := slices.Max(lower)
	var lines []legendEntry
	for i, a := range l.accounting {
		if slices.Max(a.values) <= 0 {
			continue
		}
		ln, err := mibLine(l.t, a.values)
		if err != nil {
			return nil, nil, fmt.Errorf("series %s: %w", a.name, err)
		}
		ln.Color = color.RGBA{R: 30 + uint8(60*i), G: 30, B: 30 + uint8(60*i), A: 255}
		ln.Width = vg.Points(1)
		ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(ln)
		lines = append(lines, legendEntry{a.name + " (accounting, not stacked)", ln})
		top = max(top, slices.Max(a.values))
	}
	rss, err := mibLine(l.t, total)
	if err != nil {
		return nil, nil, fmt.Errorf("series rss: %w", err)
	}
	rss.Color = color.Black
	rss.Width = vg.Points(1.5)
	p.Add(rss)
	top = max(top, slices.Max(total))
	// After every Add, which widens the axes to the data.
	p.Y.Min = 0
	p.Y.Max = max(top/mib*1.05, 1)

	legend := []legendEntry{{"RSS (process)", rss}}
	for i := len(stacked) - 1; i >= 0; i-- {
		legend = append(legend, stacked[i])
	}
	return p, append(legend, lines...), nil
}

// mibLine is a line of v (bytes) in MiB over t.
func mibLine(t, v []float64) (*plotter.Line, error) {
	pts := make(plotter.XYs, len(t))
	for i := range t {
		pts[i].X, pts[i].Y = t[i], v[i]/(1<<20)
	}
	return plotter.NewLine(pts)
}
