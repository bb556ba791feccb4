package bridge

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Leaks at task end (jni/API.md "Leaks"): every kind of leak is recorded
// here, once, by the side that finds it — counted in ProcessStats.Leaks and
// LeakedBytes, logged at WARN with its task, consumer, bytes and (when
// recorded) site, and kept in a bounded list of recent leaks for
// recentLeaks0.
//
// One leak, one record. The owners close in a fixed order at task end, and
// each gives its bytes back before the next looks: Arrow allocators (Go and
// Java) before their reservations, reservations before the pool. So
//
//   - a Go Arrow allocator's leak (its live buffers, the imports it still
//     holds, the exports Java has not released) is recorded by the
//     allocator's close (kind LeakArrow, or LeakExport when Java still
//     holds exports); its charge lives in a reservation of its own that
//     closes with it, so the reservation reports nothing for it;
//   - a reservation's leak (LeakReservation) is what its user reserved and
//     never gave back: for a Java reservation its size() (not the Go size,
//     which includes the account's local slack), recorded by Java when the
//     task's end closes it; for a Go reservation, what the unified pool's
//     close finds (pool.LeakError), by consumer;
//   - Java's Arrow producer allocator reports the Java buffers Java still
//     holds (LeakJavaArrow). A Go buffer exported into Java is the Go
//     allocator's leak, never Java's importer's: the producer reports.
//
// Resident or accounting. A reservation leak is accounting: its bytes went
// back to Spark when the task ended, and nothing says memory stays behind
// (a reservation covers memory it does not own). An Arrow leak whose
// buffers outlive the task — a Go allocator that lingers (exports Java
// still holds), Java producer buffers never released — is resident: its
// bytes stay in ProcessStats.LeakedResident until they are freed.

// Kinds of Leak.Kind, declared with their docs in leakKinds (kinds.go),
// from which Java's org.nativepool.spark.jni.LeakKind is generated.
const (
	LeakReservation = "reservation" // a reservation still holding bytes at its task's end
	LeakArrow       = "arrow"       // a Go Arrow allocator closed with buffers or imports held
	LeakExport      = "export"      // a Go Arrow allocator closed with exports Java still holds
	LeakJavaArrow   = "java-arrow"  // Java Arrow buffers still allocated at task end
)

// maxRecentLeaks bounds RecentLeaks.
const maxRecentLeaks = 256

// Leak is one leak at a task's end. It is a plain value.
type Leak struct {
	TaskAttemptID int64
	// Consumer is the consumer's name, as it was registered.
	Consumer string
	// Kind is one of the Leak* kinds.
	Kind string
	// Bytes is what the owner still held when its task ended.
	Bytes int64
	// Site is where the leaked memory was reserved or allocated when
	// allocation sites are on: the first Go frame outside nativepool, or the
	// Java caller; "" when not recorded.
	Site string
	// Resident is the part of Bytes still allocated after the task (0 for
	// accounting leaks), at the time of the record.
	Resident int64
}

// leakBook is the Bridge's record of leaks. Its zero value is ready. Safe
// for concurrent use.
type leakBook struct {
	mu struct {
		sync.Mutex
		// recent is a ring of the last maxRecentLeaks leaks; next is the
		// number recorded so far (the ring's write position mod its size).
		recent [maxRecentLeaks]Leak
		next   int64
		// bytes is the sum of every recorded leak's Bytes.
		bytes int64
		// arrow counts the leaks the Go Arrow allocators' closes found
		// (record's allocator): processArrowStats0's LEAKS and LEAKED_BYTES.
		// Java's reports of its own exports (also kind LeakExport) are not
		// among them.
		arrow struct{ n, bytes int64 }
	}
	// javaResident is what Java last said its leaked Arrow buffers still
	// hold (SetJavaLeakResident).
	javaResident atomic.Int64
}

// unnamedConsumer names a leak whose consumer was registered without a name.
const unnamedConsumer = "(unnamed consumer)"

// RecordLeak counts a leak Java found (reportLeak0), logs it at WARN and
// keeps it among the recent leaks. A negative byte count, an unknown kind or
// an empty consumer wraps ErrInvalidArgument and records nothing. The
// Bridge records the leaks it finds itself with record, which refuses
// nothing.
func (b *Bridge) RecordLeak(l Leak) error {
	if !knownLeakKind(l.Kind) {
		return fmt.Errorf("nativepool: reportLeak: unknown leak kind %q: %w", l.Kind, ErrInvalidArgument)
	}
	if l.Bytes < 0 || l.Resident < 0 {
		return fmt.Errorf("nativepool: reportLeak(%s): negative size %d (resident %d): %w", l.Consumer, l.Bytes, l.Resident, ErrInvalidArgument)
	}
	if l.Consumer == "" {
		return fmt.Errorf("nativepool: reportLeak: empty consumer name: %w", ErrInvalidArgument)
	}
	b.record(l, false)
	return nil
}

// record counts, logs and keeps a leak; the Bridge calls it directly for
// the leaks it finds itself (a Go reservation; a Go Arrow allocator's close,
// allocator true, which processArrowStats0 counts too). Go may register a
// consumer without a name, and such a leak is counted all the same, as
// unnamedConsumer.
func (b *Bridge) record(l Leak, allocator bool) {
	if l.Consumer == "" {
		l.Consumer = unnamedConsumer
	}
	lb := &b.leaks
	lb.mu.Lock()
	lb.mu.recent[lb.mu.next%maxRecentLeaks] = l
	lb.mu.next++
	lb.mu.bytes += l.Bytes
	if allocator {
		lb.mu.arrow.n++
		lb.mu.arrow.bytes += l.Bytes
	}
	lb.mu.Unlock()
	site := l.Site
	if site == "" {
		site = "not recorded (spark.nativepool.allocationSites=true records it)"
	}
	b.logger.With(LogTask(l.TaskAttemptID)).Warn("nativepool: leak at task end: "+l.Consumer+" still held bytes",
		"consumer", l.Consumer, "kind", l.Kind, "bytes", l.Bytes, "resident", l.Resident, "site", site)
}

// RecentLeaks returns the last leaks recorded (at most 256), oldest first.
func (b *Bridge) RecentLeaks() []Leak {
	lb := &b.leaks
	lb.mu.Lock()
	defer lb.mu.Unlock()
	n := min(lb.mu.next, maxRecentLeaks)
	out := make([]Leak, 0, n)
	for i := lb.mu.next - n; i < lb.mu.next; i++ {
		out = append(out, lb.mu.recent[i%maxRecentLeaks])
	}
	return out
}

// leakTotals returns the number of leaks recorded and their bytes.
func (b *Bridge) leakTotals() (n, bytes int64) {
	lb := &b.leaks
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.mu.next, lb.mu.bytes
}

// arrowLeakTotals returns the number of leaks Go Arrow allocators' closes
// found and their bytes.
func (b *Bridge) arrowLeakTotals() (n, bytes int64) {
	lb := &b.leaks
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.mu.arrow.n, lb.mu.arrow.bytes
}

// SetJavaLeakResident sets what Java's leaked Arrow buffers still hold,
// which Java recomputes whenever it looks at them (TaskArrowAllocators); it
// is part of LeakedResident. A negative n wraps ErrInvalidArgument.
func (b *Bridge) SetJavaLeakResident(n int64) error {
	if n < 0 {
		return fmt.Errorf("nativepool: leakResident(%d): negative size: %w", n, ErrInvalidArgument)
	}
	b.leaks.javaResident.Store(n)
	return nil
}

// LeakedResident is what leaks still hold after their task: the Go Arrow
// allocators that linger (their buffers and the imports they pin) and the
// Java leaked Arrow buffers as Java last said. It goes down as they are
// freed; a lingering allocator that holds nothing any more is forgotten.
func (b *Bridge) LeakedResident() int64 {
	lingering, _ := b.lingerSweep()
	return lingering + b.leaks.javaResident.Load()
}

// LiveOwner is live native memory of one consumer at one allocation site.
type LiveOwner struct {
	// Consumer is the consumer's name.
	Consumer string
	// Site is the allocating function (ffi's LiveSite), or "" when sites
	// are off.
	Site    string
	Bytes   int64
	Buffers int64
}

// ArrowSiteLister is an ArrowAllocator that can list its live buffers by
// allocation site (ffi.Allocator.LiveSites). An allocator without it is
// listed by its snapshot, with Site "".
type ArrowSiteLister interface {
	// LiveBySite lists the live buffers by site, Consumer left empty (the
	// caller knows it).
	LiveBySite() []LiveOwner
}

// LiveNative returns the live Go Arrow memory now, by consumer and site,
// largest first, at most max entries (max <= 0: none): every open
// allocator's buffers, and the lingering allocators' (outlived their task:
// leaked exports), under their consumer's name. With allocation sites off
// each allocator is read from its snapshot (its consumer's total, Site
// ""); with them on, its live buffers are grouped by site. Imported bytes
// are the Java producer's, not listed here.
func (b *Bridge) LiveNative(max int) []LiveOwner {
	if max <= 0 {
		return nil
	}
	all := b.arrow.allocators(true)
	type key struct{ consumer, site string }
	sum := make(map[key]*LiveOwner)
	add := func(consumer string, o LiveOwner) {
		if o.Bytes == 0 && o.Buffers == 0 {
			return
		}
		k := key{consumer, o.Site}
		if t := sum[k]; t != nil {
			t.Bytes += o.Bytes
			t.Buffers += o.Buffers
			return
		}
		o.Consumer = consumer
		sum[k] = &o
	}
	for _, x := range all {
		if l, ok := x.a.(ArrowSiteLister); ok {
			for _, o := range l.LiveBySite() {
				add(x.consumer, o)
			}
			continue
		}
		sn := x.a.Snapshot()
		add(x.consumer, LiveOwner{Bytes: sn.Allocated, Buffers: int64(sn.LiveBuffers)})
	}
	out := make([]LiveOwner, 0, len(sum))
	for _, o := range sum {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(x, y LiveOwner) int {
		if c := cmp.Compare(y.Bytes, x.Bytes); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Consumer, y.Consumer); c != 0 {
			return c
		}
		return cmp.Compare(x.Site, y.Site)
	})
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// flatField makes s one field of a flat text record: tabs and line breaks
// become spaces.
func flatField(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// FormatLeaks lays leaks out as recentLeaks0 returns them (jni/API.md
// "Leaks"): one line per leak, oldest first, each
// "task\tconsumer\tkind\tbytes\tresident\tsite", lines ended by '\n'.
func FormatLeaks(leaks []Leak) string {
	var b strings.Builder
	for _, l := range leaks {
		fmt.Fprintf(&b, "%d\t%s\t%s\t%d\t%d\t%s\n", l.TaskAttemptID, flatField(l.Consumer), l.Kind, l.Bytes, l.Resident, flatField(l.Site))
	}
	return b.String()
}

// FormatLiveOwners lays owners out as liveNative0 returns them (jni/API.md
// "Leaks"): one line per owner, largest first, each
// "consumer\tsite\tbytes\tbuffers", lines ended by '\n'.
func FormatLiveOwners(owners []LiveOwner) string {
	var b strings.Builder
	for _, o := range owners {
		fmt.Fprintf(&b, "%s\t%s\t%d\t%d\n", flatField(o.Consumer), flatField(o.Site), o.Bytes, o.Buffers)
	}
	return b.String()
}
