// Command chart draws the memory timeline of a nativepool run as a PNG, in
// MiB over time, with gonum.org/v1/plot. It draws one of two charts,
// chosen by the CSV's header row (then one sample per row, in bytes):
//
//   - a line chart of reserved vs allocated vs RSS (and held, when present),
//     from the CSV that sortdemo -samples and the Spark demo (samples.csv)
//     write: columns t_ms, reserved, allocated, rss, held (held optional);
//
//   - a stacked area chart of the executor memory ledger, from a CSV with
//     an unexplained column (the Spark demo's ledger.csv): t_ms, rss, one
//     column per resident part (stacked bottom up in the order, and filled
//     with the colours, of the Native Memory page: colors.go), other,
//     unexplained (RSS less the parts, the top band), and accounting columns
//     named acct:<part>, drawn as dashed lines and not stacked. Parts that
//     never reach -merge × the chart's height are grouped by owner (go.*,
//     netty.* …) or folded into "other". The axis starts at 0; when the
//     bottom part never falls below half the peak RSS (a pre-touched JVM
//     heap), a second panel draws the rest without it, from 0, so that
//     native memory is legible beside a large heap.
//
//   - on the line chart, the longest phase where reserved stays flat (a
//     tenth of the run or more) is labelled with what holds it.
//
//     go run ./examples/chart -in samples.csv -out memory.png -title "sort, 16 MiB budget"
//     go run ./examples/chart -in ledger.csv -out ledger.png -title "executor memory ledger"
package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
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
)

func main() {
	in := flag.String("in", "", "CSV of samples (t_ms,reserved,allocated,rss[,held])")
	out := flag.String("out", "memory.png", "PNG to write")
	title := flag.String("title", "nativepool: reserved vs allocated vs RSS", "chart title")
	legend := flag.String("legend", "", "legend labels to override, as col=label pairs separated by ';' (e.g. \"reserved=off-heap reserved (Spark)\")")
	merge := flag.Float64("merge", 0.01, "ledger chart: group parts that never exceed this fraction of the chart's height by owner, or fold them into \"other\"")
	flag.Parse()
	if *in == "" {
		fmt.Fprintln(os.Stderr, "chart: -in is required")
		os.Exit(2)
	}
	if err := drawChart(*in, *out, *title, *legend, *merge); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

// drawChart reads the CSV in and writes the chart its header calls for to out.
func drawChart(in, out, title, legend string, merge float64) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	header, err := csv.NewReader(bytes.NewReader(data)).Read()
	if err == nil && isLedgerHeader(header) {
		l, err := readLedger(bytes.NewReader(data))
		if err != nil {
			return err
		}
		floor := l.axisFloor()
		l.mergeSmall(merge, floor)
		return renderStacked(l, floor, title, out)
	}
	labels, err := parseLabels(legend)
	if err != nil {
		return err
	}
	s, err := readSamples(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return render(s, title, out, labels)
}

// series is one named column of the CSV, in bytes, by sample.
type series struct {
	name   string
	values []float64
	// part is the ledger part whose colour the series takes (a band of
	// several parts takes its first part's); "" outside the ledger chart.
	part string
}

// samples is a parsed CSV: sample times in seconds and the byte series.
type samples struct {
	t      []float64
	series []series
}

// columns the chart knows, in drawing order, with the legend each gets.
var known = []struct{ col, legend string }{
	{"rss", "RSS (process)"},
	{"held", "held from upstream"},
	{"reserved", "reserved (pool)"},
	{"allocated", "allocated (Arrow buffers)"},
	{"burst", "outside any accounting (burst)"},
	{"ballast", "ballast (pod guard)"},
}

// optional are known columns drawn only when some sample is not 0: the
// demo writes them always, and they matter only in a run with a burst.
var optional = map[string]bool{"burst": true, "ballast": true}

// readSamples parses the CSV. t_ms is required and so are reserved,
// allocated and rss; held is drawn if present, burst and ballast if present
// and not all 0; other columns are ignored.
// It fails on a missing column, a malformed number or no samples.
func readSamples(r io.Reader) (*samples, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[h] = i
	}
	for _, need := range []string{"t_ms", "reserved", "allocated", "rss"} {
		if _, ok := idx[need]; !ok {
			return nil, fmt.Errorf("column %q missing from header %v", need, header)
		}
	}
	s := &samples{}
	for _, k := range known {
		if _, ok := idx[k.col]; ok {
			s.series = append(s.series, series{name: k.col})
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
		t, err := strconv.ParseFloat(rec[idx["t_ms"]], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: t_ms: %w", line, err)
		}
		s.t = append(s.t, t/1000)
		for i := range s.series {
			v, err := strconv.ParseFloat(rec[idx[s.series[i].name]], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", line, s.series[i].name, err)
			}
			s.series[i].values = append(s.series[i].values, v)
		}
	}
	if len(s.t) == 0 {
		return nil, errors.New("no samples after the header")
	}
	s.series = slices.DeleteFunc(s.series, func(x series) bool {
		return optional[x.name] && !slices.ContainsFunc(x.values, func(v float64) bool { return v != 0 })
	})
	return s, nil
}

// render draws the series as lines (MiB over seconds) and saves a PNG.
func render(s *samples, title, out string, labels map[string]string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "MiB"
	p.Y.Min = 0
	// Headroom above the highest sample, so the legend (top left) never
	// covers a line.
	top := 0.0
	for _, sr := range s.series {
		for _, v := range sr.values {
			top = max(top, v/(1<<20))
		}
	}
	p.Y.Max = max(top*1.4, 1)
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	colors := map[string]color.Color{
		"rss":       color.RGBA{R: 200, G: 60, B: 60, A: 255},
		"held":      color.RGBA{R: 150, G: 150, B: 150, A: 255},
		"reserved":  color.RGBA{R: 40, G: 90, B: 200, A: 255},
		"allocated": color.RGBA{R: 40, G: 160, B: 80, A: 255},
		"burst":     color.RGBA{R: 230, G: 140, B: 20, A: 255},
		"ballast":   color.RGBA{R: 140, G: 60, B: 170, A: 255},
	}
	for _, k := range known {
		for _, sr := range s.series {
			if sr.name != k.col {
				continue
			}
			pts := make(plotter.XYs, len(s.t))
			for i := range s.t {
				pts[i].X, pts[i].Y = s.t[i], sr.values[i]/(1<<20)
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return fmt.Errorf("series %s: %w", sr.name, err)
			}
			l.Color = colors[sr.name]
			l.Width = vg.Points(1.5)
			if sr.name == "reserved" {
				// Drawn under allocated, wider, so that both show when equal.
				l.Width = vg.Points(4)
			}
			if sr.name == "held" {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(l)
			label := k.legend
			if v, ok := labels[sr.name]; ok {
				label = v
			}
			p.Legend.Add(label, l)
		}
	}
	if from, to, ok := flatPhase(s); ok {
		if err := labelFlatPhase(p, s, from, to); err != nil {
			return err
		}
	}
	p.Legend.ThumbnailWidth = vg.Points(20)
	p.Legend.Padding = vg.Points(2)
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, out); err != nil {
		return fmt.Errorf("save %s: %w", out, err)
	}
	return nil
}

// column returns the series named name, or nil.
func (s *samples) column(name string) []float64 {
	for _, sr := range s.series {
		if sr.name == name {
			return sr.values
		}
	}
	return nil
}

// flatPhase finds the longest run of samples [from, to] over which reserved
// stays within a tolerance of its value at from (1% of reserved's peak, at
// least 256 KiB) and above 0, lasting at least a tenth of the run: a phase
// where what holds the off-heap memory does not change, which reads as a
// stalled chart unless it is labelled. ok is false when there is none.
func flatPhase(s *samples) (from, to int, ok bool) {
	r := s.column("reserved")
	if len(r) < 3 {
		return 0, 0, false
	}
	tol := max(0.01*slices.Max(r), 256<<10)
	span := s.t[len(s.t)-1] - s.t[0]
	best := 0.0
	for i := 0; i < len(r); {
		j := i
		for j+1 < len(r) && math.Abs(r[j+1]-r[i]) <= tol {
			j++
		}
		if d := s.t[j] - s.t[i]; r[i] > 0 && d > best && d >= span/10 {
			best, from, to, ok = d, i, j, true
		}
		i = j + 1
	}
	return from, to, ok
}

// labelFlatPhase writes, over the flat phase [from, to] of reserved, a
// bracket and what holds the memory: reserved's level, how long, and, with
// a held column, the native pools' share of it and the rest Spark's own
// consumers' (its sorters' and aggregations' pages).
func labelFlatPhase(p *plot.Plot, s *samples, from, to int) error {
	const mib = 1 << 20
	r := s.column("reserved")
	level := 0.0
	for _, v := range r[from : to+1] {
		level = max(level, v)
	}
	text := fmt.Sprintf("reserved flat at %.0f MiB for %.0f s", level/mib, s.t[to]-s.t[from])
	if held := s.column("held"); held != nil {
		sum := 0.0
		for _, v := range held[from : to+1] {
			sum += v
		}
		native := sum / float64(to-from+1)
		text += fmt.Sprintf(":\nnative pools %.0f MiB of it, Spark's own consumers the rest", native/mib)
	}
	y := level/mib + 0.06*(p.Y.Max-p.Y.Min)
	bracket, err := plotter.NewLine(plotter.XYs{{X: s.t[from], Y: y}, {X: s.t[to], Y: y}})
	if err != nil {
		return fmt.Errorf("flat phase: %w", err)
	}
	bracket.Color = color.Gray{Y: 90}
	bracket.Width = vg.Points(1)
	p.Add(bracket)
	labels, err := plotter.NewLabels(plotter.XYLabels{
		XYs:    []plotter.XY{{X: (s.t[from] + s.t[to]) / 2, Y: y}},
		Labels: []string{text},
	})
	if err != nil {
		return fmt.Errorf("flat phase: %w", err)
	}
	labels.TextStyle[0].Font.Size = vg.Points(9)
	labels.TextStyle[0].XAlign = -0.5
	labels.TextStyle[0].YAlign = 0.1
	p.Add(labels)
	return nil
}

// niceTicks puts about six major ticks at multiples of 1, 2 or 5 × 10^k,
// labelled without trailing zeros.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if span <= 0 {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', -1, 64)}}
	}
	raw := span / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	// As many decimals as the step has (0.1 → 1), so that 3 × 0.1 is "0.3".
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e9; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(math.Round(v/step)*step, 'f', decimals, 64)})
	}
	return ticks
}

// parseLabels reads the -legend flag: col=label pairs separated by ';'.
func parseLabels(spec string) (map[string]string, error) {
	out := map[string]string{}
	if spec == "" {
		return out, nil
	}
	for _, kv := range strings.Split(spec, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-legend: %q is not col=label", kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}
