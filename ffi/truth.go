package ffi

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/nativepool/nativepool/internal/gomem"
)

// Snapshot is an allocator's books at one moment, readable at run time
// without stopping anything. Each field is read atomically, but not all of
// them at the same instant: under concurrent use the relations below hold
// exactly only between operations. Between operations
//
//	Charged   = Allocated + Slack + ImportCharged
//	Reserved ≥ Charged (equal when the reservation is dedicated)
//
// and at every instant Allocated ≤ Charged ≤ Reserved.
type Snapshot struct {
	// Consumer is the reservation's consumer, name#id.
	Consumer string
	// Allocated is the bytes in live buffers made by this allocator, exact.
	Allocated int64
	// Peak is the highest Allocated seen.
	Peak int64
	// LiveBuffers is the number of live buffers made by this allocator.
	LiveBuffers int
	// Charged is what this allocator holds in the reservation (0 once
	// closed).
	Charged int64
	// Reserved is the reservation's size.
	Reserved int64
	// Slack is charged headroom not backing any buffer (WithChunkSize).
	Slack int64
	// Gap is Reserved - Allocated - ImportCharged: bytes the pool believes
	// are in use that back no buffer this allocator knows of (slack, or
	// other uses of a shared reservation).
	Gap int64
	// Exported and ExportsLive are the bytes and number of batches exported
	// to a C consumer that has not released them yet. Their buffers are
	// included in Allocated when this allocator made them.
	Exported    int64
	ExportsLive int
	// StreamsLive is the number of exported streams not yet released.
	StreamsLive int
	// Imported and ImportsLive are the bytes and number of imported batches
	// Go still holds.
	Imported    int64
	ImportsLive int
	// ImportCharged is the part of Imported charged to the reservation
	// (ImporterCharges).
	ImportCharged int64
	// Forced is the bytes charged past a refusal since the allocator was
	// made (imports that already existed), cumulative.
	Forced int64
	// Refusals counts Allocate and Reallocate calls refused, cumulative.
	Refusals int64
	// LateFrees counts frees after Close (or after the reservation was
	// closed): their bytes were given back by Close already.
	LateFrees int64
	// Closed reports whether Close has run.
	Closed bool
}

// Snapshot returns the allocator's books; see Snapshot's doc.
func (a *Allocator) Snapshot() Snapshot {
	charged := a.charged.Load()
	closed := charged < 0
	slack := a.headroom.Load()
	if closed {
		charged, slack = 0, 0
	}
	s := Snapshot{
		Consumer:      a.consumer,
		Allocated:     a.allocated.Load(),
		Peak:          a.peak.Load(),
		LiveBuffers:   a.live.len(),
		Charged:       charged,
		Reserved:      a.res.Size(),
		Slack:         slack,
		Exported:      a.xfers.exported.Load(),
		ExportsLive:   int(a.xfers.exports.Load()),
		StreamsLive:   int(a.xfers.streams.Load()),
		Imported:      a.xfers.imported.Load(),
		ImportsLive:   int(a.xfers.imports.Load()),
		ImportCharged: a.importCharged.Load(),
		Forced:        a.forced.Load(),
		Refusals:      a.refusals.Load(),
		LateFrees:     a.late.Load(),
		Closed:        closed,
	}
	s.Gap = s.Reserved - s.Allocated - s.ImportCharged
	return s
}

// String renders the snapshot on one line for logs.
func (s Snapshot) String() string {
	return fmt.Sprintf("ffi(%s: allocated %d in %d buffers, peak %d, charged %d, reserved %d, slack %d, exported %d in %d batches, imported %d in %d batches (%d charged), forced %d, refusals %d, late frees %d, closed %t)",
		s.Consumer, s.Allocated, s.LiveBuffers, s.Peak, s.Charged, s.Reserved, s.Slack,
		s.Exported, s.ExportsLive, s.Imported, s.ImportsLive, s.ImportCharged, s.Forced, s.Refusals, s.LateFrees, s.Closed)
}

// Drift compares what the process really holds with what the books say. It
// is a check to watch, never a gate: RSS lags allocation, counts pages rather
// than bytes, and in a Spark executor includes the JVM's heap and everything
// else in the process, so watch Drift's trend, not its level (Comet #5983:
// gating on measured usage does not prevent overshoot).
type Drift struct {
	// RSS is the process's resident set, from /proc/self/statm.
	RSS int64
	// GoRuntime is what the Go runtime holds mapped and not released to the
	// OS (runtime/metrics: /memory/classes/total minus
	// /memory/classes/heap/released): Go's heap, stacks and metadata. An
	// upper bound of its resident share.
	GoRuntime int64
	// Reserved and Allocated are the books compared (as given).
	Reserved  int64
	Allocated int64
	// Drift is RSS - Reserved: how far the process is above (or below) what
	// the pools were told.
	Drift int64
	// RSSOther is RSS - GoRuntime - Allocated: everything resident that is
	// neither the Go runtime nor an accounted buffer (libc's free lists and
	// padding, untracked C memory, the JVM when embedded). A trend, never a
	// gate.
	RSSOther int64
}

// ReadRSS returns the resident set size of this process in bytes, from
// /proc/self/statm (Linux). It fails elsewhere.
func ReadRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, fmt.Errorf("ffi: ReadRSS: %w", err)
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, fmt.Errorf("ffi: ReadRSS: malformed /proc/self/statm %q", b)
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ffi: ReadRSS: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}

// MeasureDrift samples the process (RSS, Go runtime) and compares it with
// reserved and allocated, which the caller sums over whatever it wants
// compared: one allocator, every allocator of a task, or every pool of the
// process. It fails only if RSS cannot be read.
func MeasureDrift(reserved, allocated int64) (Drift, error) {
	rss, err := ReadRSS()
	if err != nil {
		return Drift{}, err
	}
	var goRuntime int64
	if mapped, released, ok := gomem.Read(); ok {
		goRuntime = mapped - released
	}
	return Drift{
		RSS:       rss,
		GoRuntime: goRuntime,
		Reserved:  reserved,
		Allocated: allocated,
		Drift:     rss - reserved,
		RSSOther:  rss - goRuntime - allocated,
	}, nil
}

// Drift measures this allocator's books against the process; see
// MeasureDrift. Meaningful when the allocator is the main user of memory in
// the process (a benchmark, a test); otherwise sum the books of all of them.
func (a *Allocator) Drift() (Drift, error) {
	s := a.Snapshot()
	return MeasureDrift(s.Reserved, s.Allocated)
}
