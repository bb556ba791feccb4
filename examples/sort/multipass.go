package extsort

import (
	"errors"
	"fmt"

	"github.com/nativepool/nativepool/pool"
)

// openRuns loads the first batch of every queued run into m's heap. When
// the pool refuses a batch and at least two runs are loaded, it merges the
// loaded runs into one new run (one pass of a multi-pass merge), which
// frees all their batches but one's worth, queues the new run and goes on:
// the fan-in is what the pool grants, never more. Runs are merged level by
// level: once a pass has shown that the runs left do not fit in one merge,
// the last runs of a level are merged on their own (or, if one is left, it
// joins the next level as it is) before runs of the next level are loaded,
// so that with a fan-in of k the merge tree is ceil(log_k(runs)) deep.
// A merge needs two runs; every run past two only makes the tree
// shallower, so their first batches are loaded as growth the merge can do
// without (pool.Reservation.WithoutWaiting): where the process has no room
// for one (a pod guard's reserve), the pool refuses it at once instead of
// letting the merge grow into memory the container does not have.
// Called by the driver without the lock, after Finish has spilled every
// in-memory chunk: from then on Spill never touches the scratch buffer
// (it only spills in-memory sources, and there are none), so the passes
// may write through it unlocked.
func (s *Sorter) openRuns(m *merger, queue []*fileSource) error {
	lastFanIn := 0 // runs merged by the last pass; 0 before the first
	for len(queue) > 0 {
		f := queue[0]
		if loaded := len(m.h); lastFanIn > 0 && loaded > 0 && f.level > mergeLevel(m)-1 &&
			loaded+len(queue) > lastFanIn {
			if loaded == 1 {
				// One run left of its level: it joins the next one unmerged.
				m.h[0].src.(*fileSource).level = f.level
				continue
			}
			var err error
			if queue, err = s.passLoaded(m, queue); err != nil {
				return err
			}
			continue
		}
		load := s.load
		if len(m.h) >= 2 {
			load = s.loadOptional
		}
		head, err := load(f)
		if err == nil {
			s.mu.Lock()
			m.add(head, f)
			s.mu.Unlock()
			queue = queue[1:]
			continue
		}
		if !errors.Is(err, pool.ErrResourcesExhausted) {
			return err
		}
		if len(m.h) < 2 {
			return fmt.Errorf("extsort: Finish: not enough memory to merge two runs: %w", err)
		}
		lastFanIn = len(m.h)
		if queue, err = s.passLoaded(m, queue); err != nil {
			return err
		}
	}
	// The final merge, done by Next: every run still queued is loaded.
	s.mu.Lock()
	storeMax(&s.maxFanIn, int64(len(m.h)))
	storeMax(&s.levels, mergeLevel(m))
	s.mu.Unlock()
	return nil
}

// passLoaded merges the runs loaded in m's heap (at least two) into one
// new run, appends it to queue and returns the queue.
func (s *Sorter) passLoaded(m *merger, queue []*fileSource) ([]*fileSource, error) {
	s.mu.Lock()
	sub := &merger{h: m.h}
	m.h = nil
	s.mu.Unlock()
	for _, e := range sub.h {
		// Nothing has been read past the head of a run opened here.
		sub.rows += e.src.(*fileSource).run.rows
	}
	passRuns := len(sub.h)
	level := mergeLevel(sub)
	storeMax(&s.maxFanIn, int64(passRuns))
	run, err := s.mergePass(sub)
	if err != nil {
		return queue, err
	}
	nf := &fileSource{run: run, level: level}
	s.mu.Lock()
	m.all = append(m.all, nf)
	s.mu.Unlock()
	s.mergePasses.Add(1)
	s.log.Debug("extsort: merge pass", "consumer", s.consumer, "runs", passRuns, "level", level, "rows", run.rows)
	return append(queue, nf), nil
}

// mergeLevel is the level of the run that merging m's loaded runs makes:
// one more than the deepest of them.
func mergeLevel(m *merger) int64 {
	var deepest int64
	for _, e := range m.h {
		if f, ok := e.src.(*fileSource); ok {
			deepest = max(deepest, f.level)
		}
	}
	return deepest + 1
}

// mergePass merges every row of sub into a new run through the scratch
// buffer, loading the sources' next batches as they run out, and releases
// the sources. The caller does not hold the lock (see openRuns).
func (s *Sorter) mergePass(sub *merger) (*runFile, error) {
	s.mu.Lock()
	rw, err := s.createRunLocked()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	keys, payloads := rw.sc.keys, rw.sc.payloads
	filled := 0
	for sub.rows > 0 {
		filled += sub.emit(keys[filled:], payloads[filled:])
		if filled == len(keys) || sub.rows == 0 {
			if err := rw.write(filled); err != nil {
				rw.abort()
				return nil, err
			}
			filled = 0
		}
		pending := sub.pending
		sub.pending = nil
		for _, f := range pending {
			head, err := s.load(f)
			if err != nil {
				rw.abort()
				return nil, err
			}
			sub.add(head, f)
		}
	}
	run, err := rw.finish()
	if err != nil {
		return nil, err
	}
	s.countRun(run)
	return run, nil
}

// loadOptional is load as growth the merge can do without: a pool whose
// process has no room for the batch refuses it at once
// (pool.Reservation.WithoutWaiting). f's later batches are loaded as usual.
func (s *Sorter) loadOptional(f *fileSource) (pair, error) {
	var head pair
	err := s.res.WithoutWaiting(func() error {
		var err error
		head, err = s.load(f)
		return err
	})
	return head, err
}

// load reads f's next batch through the accounted allocator, spilling and
// retrying while the pool refuses and a spill frees something. Call it
// without the lock.
func (s *Sorter) load(f *fileSource) (pair, error) {
	var head pair
	err := s.retryAfterSpill("read run", func() error {
		var lerr error
		if rerr := recoverRefusal(func() { head, lerr = f.load(s.alloc) }); rerr != nil {
			return rerr
		}
		return lerr
	})
	if err == nil {
		s.samplePeaks()
	}
	return head, err
}
