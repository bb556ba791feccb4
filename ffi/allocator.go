package ffi

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nativepool/nativepool/pool"
)

// closedMark is the value of Allocator.charged once Close has taken the
// charge: far enough from both ends of int64 that adding or subtracting any
// one buffer's charge keeps it negative and never overflows.
const closedMark = -(int64(1) << 62)

// Allocator is an arrow-go memory.Allocator that charges every buffer it
// hands out to a pool.Reservation for exactly as long as the buffer lives:
// Allocate and Reallocate take the bytes from the reservation before the
// memory is handed out (refusing with a panic of *AllocationError, see
// Catch), Free gives them back after the memory is freed. So Allocated() ≤
// the reservation's size at every instant.
//
// Every live buffer is recorded by the address of its first byte, in a table
// split into shards; the same record holds what C memory needs to be freed,
// so the bookkeeping costs no more than arrow-go's Mallocator's own (see
// bench/RESULTS.md). A Free of an address that is not live — a double free,
// or a buffer from another allocator — panics with a message naming it and
// releases nothing.
//
// It also exports and imports Arrow data through the C Data Interface with
// the charge following the buffers (export.go, import.go), reports its
// books at run time (Snapshot) and reports leaks, optionally with allocation
// sites, at Close. The package doc has the rules.
//
// An Allocator is safe for concurrent use by multiple goroutines, including
// C threads that release exported data; Close must not race with Allocate or
// Reallocate (Free may race with Close: it then becomes a late free). The
// zero Allocator is not usable: build one with NewAllocator. It must not be
// copied.
type Allocator struct {
	// inner provides the memory; nil means C memory from calloc, whose
	// libc pointer is kept in the live table (no second map).
	inner memory.Allocator
	res   *pool.Reservation
	// acct, when set (NewAccountAllocator), is what the allocator charges
	// instead of res (the account's own reservation): every charge and
	// uncharge goes through the owner-serialized account.
	acct     *pool.Account
	consumer string
	chunk    int64
	policy   ImportPolicy
	sites    *siteTable // nil when allocation sites are off
	logger   *slog.Logger

	// allocated is the sum of the charges of live buffers. It is raised
	// after the reservation has the bytes and lowered before they go back.
	allocated atomic.Int64
	// charged is what this allocator has added to res and not given back:
	// allocated + headroom + importCharged (exactly, between operations).
	// Close swaps it to closedMark; after that no charge is added and frees
	// are late.
	charged atomic.Int64
	// headroom is the chunked slack (WithChunkSize): charged bytes not
	// backing any buffer. Hugely negative after Close, so that the fast path
	// always fails.
	headroom      atomic.Int64
	peak          atomic.Int64
	importCharged atomic.Int64
	forced        atomic.Int64
	refusals      atomic.Int64
	late          atomic.Int64
	stale         atomic.Int64

	live  liveTable
	xfers crossingMap
}

// NewAllocator returns an allocator that takes memory from inner and charges
// it to res. A nil inner means C memory from libc (calloc, 64-byte aligned,
// zeroed): what buffers that cross the C Data Interface need, since C may not
// keep Go pointers. It is arrow-go's Mallocator's behaviour, with the
// aligned-to-libc pointer record kept in this allocator's live table instead
// of a second sync.Map. Passing memory.NewGoAllocator() suits Go-only
// operators; passing a *mallocator.Mallocator works but pays for two tables.
//
// res should be dedicated to the allocator: the allocator only ever shrinks
// what it grew, so sharing it works, but Snapshot's Reserved then includes
// the other bytes. NewAllocator panics if res is nil.
func NewAllocator(inner memory.Allocator, res *pool.Reservation, opts ...Option) *Allocator {
	if res == nil {
		panic("ffi: NewAllocator: nil reservation")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	a := &Allocator{
		inner:    inner,
		res:      res,
		consumer: res.Consumer().String(),
		chunk:    cfg.chunk,
		policy:   cfg.policy,
		logger:   cfg.logger,
	}
	if cfg.sites {
		a.sites = newSiteTable(cfg.depth)
	}
	a.live.init()
	a.xfers.init()
	return a
}

// NewAccountAllocator returns an allocator, as NewAllocator, that charges
// an operator's pool.Account instead of a reservation: a buffer's charge
// comes out of the account's local slack when it covers it, so most
// allocations touch no shared word, and the account borrows from its
// reservation in quanta. Like the account, the allocator is then not safe
// for concurrent use: every Allocate, Reallocate, Free and Close must be
// serialized with each other and with the account's other calls (the
// operator's goroutine, or its lock), and its buffers must not be exported
// through the C Data Interface, whose consumers free on their own threads
// (Export and import calls return an error). Chunked headroom
// (WithChunkSize) is ignored: the account is the slack. The account's
// reservation is the allocator's Reservation. NewAccountAllocator panics if
// acct is nil.
func NewAccountAllocator(inner memory.Allocator, acct *pool.Account, opts ...Option) *Allocator {
	if acct == nil {
		panic("ffi: NewAccountAllocator: nil account")
	}
	a := NewAllocator(inner, acct.Reservation(), append(opts, WithChunkSize(0))...)
	a.acct = acct
	return a
}

// Allocated is the number of bytes in live buffers this allocator handed
// out: exact, read with one atomic load. A buffer exported to a C consumer
// stays live until the consumer releases it.
func (a *Allocator) Allocated() int64 { return a.allocated.Load() }

// Reservation is the reservation the allocator charges.
func (a *Allocator) Reservation() *pool.Reservation { return a.res }

// Consumer is the reservation's consumer as name#id, as errors and reports
// name it.
func (a *Allocator) Consumer() string { return a.consumer }

// Allocate returns a zeroed buffer of size bytes, 64-byte aligned, after
// charging size bytes to the reservation. If the reservation refuses, it
// panics with a *AllocationError and charges nothing; recover it with Catch.
// A zero size returns an empty slice and charges nothing. It panics on a
// negative size.
func (a *Allocator) Allocate(size int) []byte {
	if size < 0 {
		panic(fmt.Sprintf("ffi: Allocate(%d): negative size", size))
	}
	return a.allocate("Allocate", size, "", 3)
}

// allocate charges, obtains and records a buffer; with allocation sites on,
// its site is the stack from skip frames above capture (3 from Allocate: the
// caller of Allocate; 4 through reallocate) with caller (WithCaller; "" for
// none).
func (a *Allocator) allocate(op string, size int, caller string, skip int) []byte {
	if size == 0 {
		return []byte{}
	}
	n := int64(size)
	if err := a.charge(n); err != nil {
		panic(a.refusal(op, n, err))
	}
	var b []byte
	var off uint32
	if a.inner == nil {
		var ok bool
		if b, off, ok = cAlloc(size); !ok {
			a.uncharge(n)
			panic(a.refusal(op, n, fmt.Errorf("calloc(%d): %w", size+alignment, ErrOutOfMemory)))
		}
	} else {
		b = a.innerAllocate(n, size)
	}
	e := liveBuf{n: n, off: off}
	if a.sites != nil {
		e.site = a.sites.capture(skip, caller) // from the caller of Allocate or Reallocate
	}
	if stale, replaced := a.live.insert(addr(b), e); replaced {
		a.dropStale(stale)
	}
	return b
}

// innerAllocate takes size bytes from the inner allocator, giving the charge
// back if it panics (arrow-go's Mallocator panics when libc is out of
// memory). The slice's capacity is clipped to size: the charge is the size.
func (a *Allocator) innerAllocate(n int64, size int) []byte {
	ok := false
	defer func() {
		if !ok {
			a.uncharge(n)
		}
	}()
	b := a.inner.Allocate(size)
	ok = true
	return b[:size:size]
}

// Reallocate resizes b to size bytes. If b has the capacity, it is resliced
// in place and its charge (its capacity) is unchanged until Free. Otherwise
// the new buffer is charged in full before it exists (both live during the
// copy, and both are counted), b is copied, freed and its charge given back.
// On refusal it panics with a *AllocationError; b is then untouched, still
// live and still charged. It panics if size is negative or b is not a live
// buffer of this allocator.
func (a *Allocator) Reallocate(size int, b []byte) []byte {
	return a.reallocate(size, b, "")
}

// reallocate is Reallocate with the foreign caller of WithCaller ("" for
// none). It must be called directly by a Reallocate method: allocate's skip
// of 4 counts on it.
func (a *Allocator) reallocate(size int, b []byte, caller string) []byte {
	if size < 0 {
		panic(fmt.Sprintf("ffi: Reallocate(%d): negative size", size))
	}
	if cap(b) == 0 {
		return a.allocate("Reallocate", size, caller, 4)
	}
	p := addr(b)
	if cap(b) >= size {
		if _, ok := a.live.lookup(p); !ok {
			panic(a.notLive("Reallocate", b))
		}
		return b[:size]
	}
	// Take b out of the table first: a concurrent Free of b (a caller bug)
	// then fails loudly instead of freeing memory being copied.
	old, ok := a.live.remove(p)
	if !ok {
		panic(a.notLive("Reallocate", b))
	}
	restore := true
	defer func() {
		if restore {
			a.live.insert(p, old)
		}
	}()
	nb := a.allocate("Reallocate", size, caller, 4)
	restore = false
	copy(nb, b)
	a.dispose(b, old)
	a.uncharge(old.n)
	return nb
}

// Free frees b and gives its charge back, after the memory is freed. Free of
// an empty slice does nothing (arrow-go frees never-allocated buffers that
// way). It panics, releasing nothing, if b is not a live buffer of this
// allocator: freed twice, or allocated elsewhere.
func (a *Allocator) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	e, ok := a.live.remove(addr(b))
	if !ok {
		panic(a.notLive("Free", b))
	}
	a.dispose(b, e)
	a.uncharge(e.n)
}

// dispose gives b's memory back to where it came from.
func (a *Allocator) dispose(b []byte, e liveBuf) {
	if a.inner == nil {
		cFree(b, e.off, e.n)
		return
	}
	a.inner.Free(b[:cap(b)])
}

// charge takes n bytes for a new buffer, from the chunk headroom if it has
// them, else from the reservation, and then counts them as allocated. On
// error nothing is charged.
func (a *Allocator) charge(n int64) error {
	if a.chunk == 0 {
		if err := a.reserve(n); err != nil {
			return err
		}
	} else if a.headroom.Add(-n) < 0 {
		a.headroom.Add(n)
		// Take a whole number of chunks, or exactly n if that much is refused
		// (never refuse a request only because of rounding).
		g := n
		if r := n % a.chunk; n <= math.MaxInt64-a.chunk && r != 0 {
			g = n + a.chunk - r
		}
		err := a.reserve(g)
		if err != nil && g != n && errors.Is(err, pool.ErrResourcesExhausted) {
			g, err = n, a.reserve(n)
		}
		if err != nil {
			return err
		}
		a.headroom.Add(g - n)
	}
	v := a.allocated.Add(n)
	for {
		p := a.peak.Load()
		if v <= p || a.peak.CompareAndSwap(p, v) {
			return nil
		}
	}
}

// uncharge gives back the charge of a freed buffer: to the reservation, or
// to the headroom (trimmed back to one chunk once it passes two).
func (a *Allocator) uncharge(n int64) {
	a.allocated.Add(-n)
	if a.chunk == 0 {
		a.unreserve(n)
		return
	}
	h := a.headroom.Add(n)
	if h < 0 {
		// Either closed (Close gave the whole charge back) or a concurrent
		// Allocate is between taking and returning headroom it could not get.
		if a.charged.Load() < 0 {
			a.late.Add(1)
		}
		return
	}
	if h > 2*a.chunk && a.headroom.CompareAndSwap(h, a.chunk) {
		a.unreserve(h - a.chunk)
	}
}

// reserve grows the reservation by g and counts it as charged. It fails,
// changing nothing, if the reservation refuses or the allocator is closed.
func (a *Allocator) reserve(g int64) error {
	if a.charged.Load() < 0 {
		return a.closedErr()
	}
	if err := a.tryGrowRes(g); err != nil {
		return err
	}
	if a.charged.Add(g) < 0 { // Close took the charge meanwhile
		a.charged.Add(-g)
		_ = a.shrinkRes(g)
		return a.closedErr()
	}
	return nil
}

// reserveForced charges g bytes that already exist: TryGrow, and if the pool
// refuses, Grow past its limit and count the bytes as forced (CockroachDB's
// limited-then-unlimited account). It fails, changing nothing, if the
// allocator or the reservation is closed, or if upstream fails during the
// Grow.
func (a *Allocator) reserveForced(g int64) error {
	err := a.reserve(g)
	if err == nil || !errors.Is(err, pool.ErrResourcesExhausted) {
		return err
	}
	if err := a.growRes(g); err != nil {
		if errors.Is(err, pool.ErrClosed) { // nothing was recorded
			return a.closedErr()
		}
		// Recorded, but upstream failed (a Java exception for pools
		// bridged to Spark, such as a task kill): the bytes go back and the
		// caller fails with that failure, leaving nothing charged.
		_ = a.shrinkRes(g)
		return err
	}
	if a.charged.Add(g) < 0 {
		a.charged.Add(-g)
		_ = a.shrinkRes(g)
		return a.closedErr()
	}
	a.forced.Add(g)
	return nil
}

// unreserve gives g charged bytes back to the reservation, unless Close has
// already given back everything (a late free).
func (a *Allocator) unreserve(g int64) {
	if a.charged.Add(-g) < 0 {
		a.charged.Add(g)
		a.late.Add(1)
		return
	}
	if err := a.shrinkRes(g); err != nil {
		// The reservation was closed (or shrunk by someone else) before this
		// allocator: its pool already has the bytes back.
		a.late.Add(1)
	}
}

// tryGrowRes takes g bytes from the account or the reservation.
func (a *Allocator) tryGrowRes(g int64) error {
	if a.acct != nil {
		return a.acct.TryGrow(g)
	}
	return a.res.TryGrow(g)
}

// growRes takes g bytes past the pool's limit (see GrowReporting).
func (a *Allocator) growRes(g int64) error {
	if a.acct == nil {
		return a.res.GrowReporting(g)
	}
	if a.acct.Closed() {
		return fmt.Errorf("ffi: Grow(%d) on %s: %w", g, a.acct, pool.ErrClosed)
	}
	a.acct.Grow(g)
	return nil
}

// shrinkRes gives g bytes back to the account or the reservation; it
// fails, changing nothing, if they do not hold g or are closed.
func (a *Allocator) shrinkRes(g int64) error {
	if a.acct == nil {
		_, err := a.res.TryShrink(g)
		return err
	}
	switch {
	case a.acct.Closed():
		return fmt.Errorf("ffi: Shrink(%d) on %s: %w", g, a.acct, pool.ErrClosed)
	case g > a.acct.Used():
		return fmt.Errorf("ffi: Shrink(%d) on %s: %w", g, a.acct, pool.ErrInvalidSize)
	}
	a.acct.Shrink(g)
	return nil
}

// dropStale forgets a record whose address was handed out again without a
// Free: only Go memory can do that (the GC reclaimed a leaked buffer).
func (a *Allocator) dropStale(stale liveBuf) {
	a.stale.Add(1)
	a.uncharge(stale.n)
	a.logger.Warn("ffi: buffer reclaimed by the GC without Free; charge released",
		"consumer", a.consumer, "bytes", stale.n)
}

func (a *Allocator) refusal(op string, n int64, err error) *AllocationError {
	a.refusals.Add(1)
	return &AllocationError{Op: op, Requested: n, Consumer: a.consumer, Allocated: a.allocated.Load(), Err: err}
}

func (a *Allocator) notLive(op string, b []byte) string {
	return fmt.Sprintf("ffi: %s(%d bytes at %#x) for %s: not a live buffer of this allocator (freed already, or allocated elsewhere)",
		op, cap(b), addr(b), a.consumer)
}

func (a *Allocator) closedErr() error {
	return fmt.Errorf("ffi: allocator of %s: %w", a.consumer, pool.ErrClosed)
}

// addr is the address of b's first byte, the key of the live table.
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

var _ memory.Allocator = (*Allocator)(nil)
