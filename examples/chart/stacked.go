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
// bottom band's label says when the axis is cut at floor bytes, other's how
// many small parts it sums, and unexplained's in how many samples it was
// negative (drawn as 0).
func stackBands(l *ledger, floor float64) []stackBand {
	const mib = 1 << 20
	var bands []stackBand
	for i, part := range l.parts {
		name := part.name
		if name == colOther && len(l.merged) > 0 {
			name = fmt.Sprintf("other (%d small parts)", len(l.merged))
		}
		if i == 0 && floor > 0 {
			name += fmt.Sprintf(" (cut: the axis starts at %g MiB)", floor/mib)
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
// axis starting at floor bytes, see axisFloor): stackBands, bottom up (a
// negative remainder is drawn as 0), the RSS line over them, and the
// accounting columns as dashed lines that are not stacked (one that stays
// below the floor is named in the legend with its peak instead). The legend
// sits right of the plot: RSS, then the bands top first (as the Native
// Memory page lists them), then the accounting lines. It saves a PNG of
// 10×5.5 inches.
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
	for _, b := range stackBands(l, floor) {
		if err := band(b.label, b.values, b.color); err != nil {
			return err
		}
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
