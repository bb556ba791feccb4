package main

// The ledger chart: the executor memory ledger (ledger.go) drawn as stacked
// areas, one band per resident part, the unexplained remainder on top and
// the RSS line over them.

import (
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
