package main

// The executor memory ledger's CSV (the Spark demo's ledger.csv): parsing,
// the axis floor and the grouping of small parts; stacked.go draws it.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Column names of a ledger CSV. Every other column is a resident part,
// stacked in the order every chart of the ledger uses (compareParts), except
// those that start with accountingPrefix.
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
// parts (bytes, in stacking order: compareParts), the unexplained remainder (RSS less the
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
			l.parts = append(l.parts, series{name: h, part: h})
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
	slices.SortStableFunc(l.parts, func(a, b series) int { return compareParts(a.part, b.part) })
	return l, nil
}

// axisFloor is where the stacked chart's MiB axis starts: 0, unless the
// bottom part never falls below half the peak RSS (a pre-touched JVM heap
// of fixed size), in which case most of that band is cut so that the parts
// above it get the chart's height: 90% of the band's lowest value, rounded
// down to a multiple of the power of ten below it (921 MiB → 900 MiB). In
// bytes.
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
			out = append(out, &series{name: p.name, values: p.values, part: p.part})
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
		out[slot[g]] = &series{name: name, values: g.values, part: g.names[0]}
	}
	var kept []series
	for _, p := range out {
		if p != nil {
			kept = append(kept, *p)
		}
	}
	if hasOther || len(l.merged) > 0 {
		kept = append(kept, series{name: colOther, values: other, part: colOther})
	}
	l.parts = kept
}

func addTo(sum, v []float64) {
	for i := range sum {
		sum[i] += v[i]
	}
}
