package bridge

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nativepool/nativepool/internal/cgroup"
	"github.com/nativepool/nativepool/internal/guard"
	"github.com/nativepool/nativepool/internal/writeback"
	"github.com/nativepool/nativepool/pool"
)

// The pod guard in the process: package guard's policy, fed by the memory
// cgroup (or, without a limit there, the process's resident set against a
// configured limit) and by the Bridge's native figures, and acting on every
// open task pool. One guard runs at a time; configureGuard0 replaces it.

// GuardSettings are configureGuard0's.
type GuardSettings struct {
	// Enabled runs the guard; false stops any that runs.
	Enabled bool
	// Reserve is the headroom to keep under the limit, in bytes; 0 is
	// guard.DefaultReserve of the limit found.
	Reserve int64
	// Limit is the limit to keep where the memory cgroup sets none, checked
	// against the process's resident memory (YARN's process-tree check, a
	// VM); 0 for none: the guard then stands by unless a cgroup limit is
	// found.
	Limit int64
	// LimitExplicit makes Limit apply where a cgroup limit exists too: the
	// tighter one is kept.
	LimitExplicit bool
	// ProcessTree holds Limit, where no cgroup sets one, against the
	// resident memory of the process tree the process belongs to, as
	// YARN's NodeManager measures a container (cgroup.TreeReader: every
	// process's resident pages, file-backed ones included, the Python
	// workers a Spark executor forks included), instead of the process's
	// own anonymous and shared memory.
	ProcessTree bool
	// OffHeap is Spark's off-heap memory as a whole (guard.OffHeap), whose
	// free bytes the guard holds while the headroom is short, so that every
	// consumer of the executor gives way, not only nativepool's; nil: the
	// guard makes native consumers give way only, into their pools'
	// ballast.
	OffHeap guard.OffHeap
}

// guardState is the Bridge's running guard, if any.
type guardState struct {
	mu      sync.Mutex // serialises ConfigureGuard
	current atomic.Pointer[runningGuard]
	// admission is the pool.Admission every task pool is built with: it
	// asks the running guard, if any.
	admission guardAdmission
}

// runningGuard is one guard with what it samples and what wakes it.
type runningGuard struct {
	g        *guard.Guard
	src      *guardSource
	watch    *cgroup.Watch // nil without the kernel's notifications
	stopWake chan struct{}
	wakeDone chan struct{}
}

// guardAdmission is the task pools' pool.Admission: the running guard's
// Admit, or nil when none runs.
type guardAdmission struct{ b *Bridge }

// Admit implements pool.Admission.
func (a guardAdmission) Admit(n int64) error {
	if rg := a.b.guard.current.Load(); rg != nil {
		return rg.g.Admit(n)
	}
	return nil
}

// AdmitNow implements pool.ImmediateAdmission: the running guard's
// AdmitNow, or nil when none runs.
func (a guardAdmission) AdmitNow(n int64) error {
	if rg := a.b.guard.current.Load(); rg != nil {
		return rg.g.AdmitNow(n)
	}
	return nil
}

// Lend implements pool.Lender: the running guard's Lend, or nothing when
// none runs.
func (a guardAdmission) Lend(n int64) int64 {
	if rg := a.b.guard.current.Load(); rg != nil {
		return rg.g.Lend(n)
	}
	return 0
}

// Gather implements pool.Gatherer: the running guard's Gather, or nothing
// when none runs.
func (a guardAdmission) Gather(n int64) int64 {
	if rg := a.b.guard.current.Load(); rg != nil {
		return rg.g.Gather(n)
	}
	return 0
}

// Repay implements pool.Lender: the running guard's Repay (a guard that
// replaced the lender's takes the repayment as nothing to do).
func (a guardAdmission) Repay(n int64) {
	if rg := a.b.guard.current.Load(); rg != nil {
		rg.g.Repay(n)
	}
}

// ConfigureGuard stops the running guard, if any, and starts one with s
// (s.Enabled false only stops). A negative reserve or limit wraps
// ErrInvalidArgument and changes nothing. Where the process is in a memory
// cgroup with a limit, the guard keeps that limit against the memory the
// kernel cannot reclaim; otherwise, with s.Limit, that limit against the
// process's resident memory; otherwise it stands by (Stats says inactive).
// The ballast of the stopped guard goes back to Spark. ConfigureGuard owns
// s.OffHeap: when it has a Close method, it is closed once the guard it
// serves has stopped and handed its ballast back, or at once when no guard
// starts with it (an error, or s.Enabled false).
func (b *Bridge) ConfigureGuard(s GuardSettings) error {
	if s.Reserve < 0 || s.Limit < 0 {
		closeOffHeap(s.OffHeap)
		return fmt.Errorf("nativepool: configureGuard: reserve %d, limit %d: %w", s.Reserve, s.Limit, ErrInvalidArgument)
	}
	b.guard.mu.Lock()
	defer b.guard.mu.Unlock()
	if old := b.guard.current.Swap(nil); old != nil {
		old.stop()
		b.releaseAllBallast()
	}
	if !s.Enabled {
		closeOffHeap(s.OffHeap)
		b.logger.Info("nativepool: pod guard off")
		return nil
	}
	src := b.newGuardSource(s)
	b.startGuard(src, s.Reserve, src.notify, true)
	return nil
}

// startGuard starts a guard over src with reserve (0: the default for the
// limit src reads now), woken by what notify returns (nil: sampling only),
// and logs what it keeps. Without run the guard's goroutine does not start
// (a test steps it with GuardStep). The caller holds b.guard.mu, and no
// guard runs.
func (b *Bridge) startGuard(src *guardSource, reserve int64, notify func(limit, reserve int64) *cgroup.Watch, run bool) {
	limit := src.limitNow()
	if reserve == 0 {
		reserve = guard.DefaultReserve(max(limit, 0))
	}
	g := guard.New(guard.Config{Reserve: reserve}, src, guardNative{b}, guard.Runtime{
		FreeOSMemory: b.freeOSMemory,
		MallocTrim:   b.rts.rt.MallocTrim,
		Writeback:    b.writeBackSpills,
		OffHeap:      src.settings.OffHeap,
	}, nil, b.logger)
	rg := &runningGuard{g: g, src: src, stopWake: make(chan struct{}), wakeDone: make(chan struct{})}
	if limit > 0 && notify != nil {
		rg.watch = notify(limit, reserve)
	}
	b.guard.current.Store(rg)
	if run {
		g.Start()
	}
	go rg.forwardWakes()
	attrs := []any{"limit", limit, "reserve", reserve, "against", src.how(),
		"offHeap", src.settings.OffHeap != nil, "spillDirs", b.spillDirs.List()}
	if rg.watch != nil {
		attrs = append(attrs, "woken", "by the kernel's notifications")
	} else {
		attrs = append(attrs, "woken", "by its own sampling")
	}
	if limit <= 0 {
		b.logger.Info("nativepool: pod guard stands by: no memory limit found (no cgroup limit; spark.nativepool.guard.limit unset)", attrs...)
	} else {
		b.logger.Info("nativepool: pod guard on", attrs...)
	}
}

// forwardWakes turns the kernel's notifications into guard wake-ups until
// the guard stops.
func (rg *runningGuard) forwardWakes() {
	defer close(rg.wakeDone)
	if rg.watch == nil {
		<-rg.stopWake
		return
	}
	for {
		select {
		case <-rg.watch.C():
			rg.g.Wake()
		case <-rg.stopWake:
			return
		}
	}
}

// stop ends the guard, its wake-ups and its sampler.
func (rg *runningGuard) stop() {
	close(rg.stopWake)
	<-rg.wakeDone
	if rg.watch != nil {
		_ = rg.watch.Close()
	}
	rg.g.Stop() // hands the off-heap ballast back
	rg.src.close()
	closeOffHeap(rg.src.settings.OffHeap)
}

// closeOffHeap closes an OffHeap that can be closed (a JVM global ref).
func closeOffHeap(o guard.OffHeap) {
	if c, ok := o.(interface{ Close() }); ok {
		c.Close()
	}
}

// absorbBallast tells the running guard, if any, that n bytes of a pool's
// ballast go back to Spark with the pool (guard.Guard.Absorb).
func (b *Bridge) absorbBallast(n int64) {
	if rg := b.guard.current.Load(); rg != nil {
		rg.g.Absorb(n)
	}
}

// StopGuard stops the running guard, if any, and hands its ballast back.
func (b *Bridge) StopGuard() { _ = b.ConfigureGuard(GuardSettings{}) }

// GuardStats returns the running guard's figures (Active false and Limit
// -1 when none runs or it found no limit).
func (b *Bridge) GuardStats() guard.Stats {
	if rg := b.guard.current.Load(); rg != nil {
		return rg.g.Stats()
	}
	return guard.Stats{Limit: -1, Unreclaimable: -1, Headroom: -1, LastReaction: -1}
}

// GuardEpisodes returns the running guard's last episodes, oldest first.
func (b *Bridge) GuardEpisodes() []guard.Episode {
	if rg := b.guard.current.Load(); rg != nil {
		return rg.g.Episodes()
	}
	return nil
}

// GuardStep samples and reacts once, on the calling goroutine, as the
// guard's own goroutine does every period: for tests, which then need not
// wait for a period. It returns false when no guard runs.
func (b *Bridge) GuardStep() bool {
	rg := b.guard.current.Load()
	if rg == nil {
		return false
	}
	rg.g.Step()
	return true
}

// guardSource reads a guard.Sample: the memory cgroup's figures (or the
// process's resident memory against the configured limit) and the Bridge's
// native figures.
type guardSource struct {
	b        *Bridge
	settings GuardSettings
	mu       sync.Mutex // the sampler is not safe for concurrent use
	group    *cgroup.Group
	sampler  *cgroup.Sampler
	// tree reads the process tree's resident memory (settings.ProcessTree).
	tree *cgroup.TreeReader
	// kernel, when set, replaces the cgroup and /proc as what reads the
	// limit and the unreclaimable memory (tests).
	kernel func() (limit, unreclaimable int64, err error)
}

// newGuardSource locates the process's memory cgroup and opens its files.
func (b *Bridge) newGuardSource(s GuardSettings) *guardSource {
	src := &guardSource{b: b, settings: s}
	if s.ProcessTree {
		src.tree = cgroup.NewTreeReader(os.ReadFile, cgroup.ProcPIDs, os.Getpid(), int64(os.Getpagesize()), 0)
	}
	g, ok, err := cgroup.Locate(os.ReadFile)
	switch {
	case err != nil:
		b.logger.Debug("nativepool: pod guard: no memory cgroup found", "err", err)
	case ok:
		sm, err := cgroup.NewSampler(g)
		if err != nil {
			b.logger.Warn("nativepool: pod guard: the memory cgroup cannot be read; using the process's resident memory", "group", g.Path, "err", err)
			break
		}
		r, err := sm.Read()
		if err != nil || r.Limit < 0 {
			_ = sm.Close()
			break
		}
		src.group, src.sampler = &g, sm
	}
	return src
}

// limitNow is the limit the guard keeps as configured now (-1: none).
func (s *guardSource) limitNow() int64 {
	smp, err := s.Read()
	if err != nil {
		return -1
	}
	return smp.Limit
}

// how says what the guard keeps the limit against.
func (s *guardSource) how() string {
	if s.kernel != nil {
		return "a test's figures"
	}
	if s.group != nil {
		return "the memory cgroup " + s.group.Path + " (" + s.group.Version.String() + "): memory the kernel cannot reclaim"
	}
	if s.settings.Limit > 0 && s.tree != nil {
		return "the process tree's resident memory (every process of the container, file-backed pages included, as YARN's NodeManager counts it; no cgroup limit)"
	}
	if s.settings.Limit > 0 {
		return "the process's resident memory (anonymous and shared; no cgroup limit)"
	}
	return "nothing"
}

// notify asks the kernel to wake the guard when memory gets tight: a v1
// usage threshold two reserves under the limit (usage counts page cache,
// so this wakes early, never late), or a v2 PSI trigger. nil when the
// kernel offers neither, or the guard keeps no cgroup's limit.
func (s *guardSource) notify(limit, reserve int64) *cgroup.Watch {
	if s.group == nil {
		return nil
	}
	w, err := s.group.NotifyAbove(limit - 2*reserve)
	if err == nil {
		return w
	}
	// 100 ms of stall in a 2 s window (the shortest window an unprivileged
	// process may ask for): memory is being reclaimed.
	if w, perr := s.group.NotifyPressure(100_000, 2_000_000); perr == nil {
		return w
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		s.b.logger.Debug("nativepool: pod guard: no kernel notification; sampling only", "err", err)
	}
	return nil
}

func (s *guardSource) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sampler != nil {
		_ = s.sampler.Close()
		s.sampler = nil
	}
}

// Read implements guard.Source.
func (s *guardSource) Read() (guard.Sample, error) {
	smp := guard.Sample{Time: time.Now(), Limit: -1}
	if s.kernel != nil {
		limit, unreclaimable, err := s.kernel()
		if err != nil {
			return smp, err
		}
		smp.Limit, smp.Unreclaimable = limit, unreclaimable
		smp.Native = s.b.nativeResident()
		smp.Held, smp.Ballast = s.b.heldAndBallast()
		return smp, nil
	}
	s.mu.Lock()
	sm := s.sampler
	var r cgroup.Reading
	var err error
	if sm != nil {
		r, err = sm.Read()
	}
	s.mu.Unlock()
	switch {
	case sm != nil && err != nil:
		return smp, err
	case sm != nil && r.Limit >= 0:
		smp.Limit, smp.Unreclaimable = r.Limit, r.UnreclaimableUsage()
		smp.Dirty = max(r.Dirty, 0) + max(r.Writeback, 0)
		if s.settings.LimitExplicit && s.settings.Limit > 0 && s.settings.Limit < smp.Limit {
			smp.Limit = s.settings.Limit
		}
	case s.settings.Limit > 0:
		resident, err := s.processResident()
		if err != nil {
			return smp, err
		}
		smp.Limit, smp.Unreclaimable = s.settings.Limit, resident
	}
	smp.Native = s.b.nativeResident()
	smp.Held, smp.Ballast = s.b.heldAndBallast()
	return smp, nil
}

// processResident is what a configured limit is held against where no
// cgroup sets one: the process tree's resident memory (ProcessTree), else
// the process's own anonymous and shared memory.
func (s *guardSource) processResident() (int64, error) {
	if s.tree != nil {
		t, err := s.tree.Read()
		return t.Resident, err
	}
	return cgroup.ProcessResident(os.ReadFile)
}

// nativeResident is the memory the native side owns now: what the Go
// runtime holds mapped, and the live buffers of the Go Arrow allocators
// (C memory), open or lingering.
func (b *Bridge) nativeResident() int64 {
	var n int64
	b.rts.mu.Lock()
	if mapped := b.goMappedLocked(); mapped > 0 {
		n += mapped
	}
	b.rts.mu.Unlock()
	for _, o := range b.arrow.allocators(true) {
		n += o.a.Snapshot().Allocated
	}
	return n
}

// heldAndBallast sums what the open task pools hold from Spark and the
// part of it kept as ballast.
func (b *Bridge) heldAndBallast() (held, ballast int64) {
	for _, tp := range b.openTaskPools() {
		s := tp.unified.Stats()
		held += s.Held
		ballast += s.Ballast
	}
	return held, ballast
}

// openTaskPools lists the task pools open now.
func (b *Bridge) openTaskPools() []*taskPool {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*taskPool, 0, len(b.mu.tasks))
	for tp := range b.mu.tasks {
		if !tp.closed {
			out = append(out, tp)
		}
	}
	return out
}

// guardNative is guard.Native over every open task pool.
type guardNative struct{ b *Bridge }

// SpillToBallast implements guard.Native: the pools that reserve the most
// first, each through ReclaimToBallast (its spillable consumers, largest
// first), until target bytes are ballast. A pool that is closing is
// skipped (its close hands everything back anyway).
func (n guardNative) SpillToBallast(target int64) (int64, []guard.Spill) {
	type cand struct {
		tp       *taskPool
		reserved int64
	}
	var cands []cand
	for _, tp := range n.b.openTaskPools() {
		cands = append(cands, cand{tp, tp.unified.Stats().Reserved})
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(b.reserved, a.reserved) })
	var freed int64
	var spills []guard.Spill
	for _, c := range cands {
		if freed >= target {
			break
		}
		if !c.tp.calls.enterAcquire() {
			continue
		}
		got, who, err := c.tp.unified.ReclaimToBallast(target - freed)
		c.tp.calls.exit()
		if err != nil {
			for _, e := range JavaExceptions(err) {
				e.Discard() // logged by the pool; nobody to rethrow it to
			}
			c.tp.logger.Warn("nativepool: pod guard: a spill for the guard failed", "err", err)
		}
		freed += got
		named := int64(0)
		for _, w := range who {
			named += w.Bytes
			spills = append(spills, guard.Spill{Consumer: fmt.Sprintf("%s (task %d)", w.Consumer, c.tp.taskID), Bytes: w.Bytes})
		}
		if got > named {
			// What the pool held free (slack, and what shrinks left after the
			// spills): moved into ballast without anyone spilling.
			spills = append(spills, guard.Spill{Consumer: fmt.Sprintf("free slack (task %d)", c.tp.taskID), Bytes: got - named})
		}
	}
	return freed, spills
}

// ReleaseBallast implements guard.Native: the open pools' ballast goes back
// to Spark, up to n bytes.
func (n guardNative) ReleaseBallast(limit int64) int64 {
	var released int64
	for _, tp := range n.b.openTaskPools() {
		if released >= limit {
			break
		}
		got, err := tp.unified.ReleaseBallast(limit - released)
		if err != nil {
			for _, e := range JavaExceptions(err) {
				e.Discard()
			}
			tp.logger.Warn("nativepool: pod guard: handing ballast back to Spark failed; it stays owed", "err", err)
		}
		released += got
	}
	return released
}

// releaseAllBallast hands every open pool's ballast back (a guard stopped).
func (b *Bridge) releaseAllBallast() {
	guardNative{b}.ReleaseBallast(1<<63 - 1)
}

// AddSpillDir adds a directory spills write in (an absolute path to an
// existing directory: Spark's local directories, an engine's spill
// directory) to those whose recently written files the pod guard writes
// back and drops from the page cache during an episode. A bad path wraps
// ErrInvalidArgument and changes nothing.
func (b *Bridge) AddSpillDir(dir string) error {
	if err := b.spillDirs.Add(dir); err != nil {
		return fmt.Errorf("nativepool: addSpillDir: %w: %w", err, ErrInvalidArgument)
	}
	return nil
}

// writeBackSpills is guard.Runtime.Writeback: the spill directories'
// recently written files go to disk and out of the page cache, and so do
// the recently written files the process maps (native libraries extracted
// at load; where there is no /proc/self/maps, none).
func (b *Bridge) writeBackSpills() {
	start := time.Now()
	r := b.spillDirs.WriteBack(start)
	var m writeback.Result
	if maps, err := os.Open("/proc/self/maps"); err == nil {
		m = b.spillDirs.WriteBackMapped(start, maps)
		maps.Close()
	}
	b.logger.Debug("nativepool: pod guard: spill files written back and dropped from the page cache",
		"files", r.Files, "bytes", r.Bytes, "failed", r.Failed, "mappedFiles", m.Files, "mappedBytes", m.Bytes,
		"took", time.Since(start))
}

// freeOSMemory is guard.Runtime.FreeOSMemory: the Go runtime's idle heap
// goes back to the OS; it returns how much did.
func (b *Bridge) freeOSMemory() int64 {
	b.rts.mu.Lock()
	rt := b.rts.rt
	b.rts.mu.Unlock()
	if rt.FreeOSMemory == nil || rt.GoMemory == nil {
		return 0
	}
	_, before := rt.GoMemory()
	rt.FreeOSMemory()
	_, after := rt.GoMemory()
	return max(after-before, 0)
}

var (
	_ pool.ImmediateAdmission = guardAdmission{}
	_ pool.Lender             = guardAdmission{}
	_ pool.Gatherer           = guardAdmission{}
)

// FormatGuardEpisodes lays episodes out as guardEpisodes0 returns them (one
// record per line, fields separated by tabs; jni/API.md "Pod guard"):
// id, start and end (Unix milliseconds, 0 while open), limit, reserve,
// start and peak unreclaimable, start and peak non-native, spilled bytes,
// reaction and recovery (microseconds, -1 none), Go heap returned, trims,
// nothing-left (0 or 1), Spark's off-heap memory taken as ballast and the
// most held at once (bytes) and the time to the first byte taken
// (microseconds, -1 none), and the spills: "bytes=consumer" joined by the
// unit separator (U+001F).
func FormatGuardEpisodes(eps []guard.Episode, now time.Time) string {
	var sb strings.Builder
	for _, e := range eps {
		end := int64(0)
		if !e.Open() {
			end = e.End.UnixMilli()
		}
		reaction := int64(-1)
		if e.Reaction >= 0 {
			reaction = e.Reaction.Microseconds()
		}
		offHeapReaction := int64(-1)
		if e.OffHeapReaction >= 0 {
			offHeapReaction = e.OffHeapReaction.Microseconds()
		}
		fields := []int64{e.ID, e.Start.UnixMilli(), end, e.Limit, e.Reserve,
			e.StartUnreclaimable, e.PeakUnreclaimable, e.StartNonNative, e.PeakNonNative,
			e.Spilled, reaction, e.Recovery(now).Microseconds(), e.GoFreed, int64(e.Trims), b2i(e.NothingLeft),
			e.OffHeapTaken, e.OffHeapPeak, offHeapReaction}
		for i, f := range fields {
			if i > 0 {
				sb.WriteByte('\t')
			}
			sb.WriteString(strconv.FormatInt(f, 10))
		}
		sb.WriteByte('\t')
		for i, sp := range e.Spills {
			if i > 0 {
				sb.WriteByte('\x1f')
			}
			sb.WriteString(strconv.FormatInt(sp.Bytes, 10))
			sb.WriteByte('=')
			sb.WriteString(strings.Map(func(r rune) rune {
				if r == '\t' || r == '\n' || r == '\x1f' {
					return ' '
				}
				return r
			}, sp.Consumer))
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}
