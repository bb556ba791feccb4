package extsort

import (
	"errors"
	"fmt"

	"github.com/nativepool/nativepool/pool"
)

// openRuns loads the first batch of every queued run into m's heap. When
// the pool refuses a batch and at least two runs are loaded, it merges the
// loaded runs into one new run (one pass of a multi-pass merge), which
// frees all their batches but one's worth, queues the new run and goes on.
// Called by the driver without the lock, after Finish has spilled every
// in-memory chunk: from then on Spill never touches the scratch buffer
// (it only spills in-memory sources, and there are none), so the passes
// may write through it unlocked.
func (s *Sorter) openRuns(m *merger, queue []*fileSource) error {
	for len(queue) > 0 {
		f := queue[0]
		head, err := s.load(f)
		if err == nil {
			s.lock()
			m.add(head, f)
			s.unlock()
			queue = queue[1:]
			continue
		}
		if !errors.Is(err, pool.ErrResourcesExhausted) {
			return err
		}
		s.lock()
		sub := &merger{h: m.h}
		m.h = nil
		s.unlock()
		if len(sub.h) < 2 {
			return fmt.Errorf("extsort: Finish: not enough memory to merge two runs: %w", err)
		}
		for _, e := range sub.h {
			// Nothing has been read past the head of a run opened here.
			sub.rows += e.src.(*fileSource).run.rows
		}
		passRuns := len(sub.h)
		run, err := s.mergePass(sub)
		if err != nil {
			return err
		}
		nf := &fileSource{run: run}
		s.lock()
		m.all = append(m.all, nf)
		s.unlock()
		queue = append(queue, nf)
		s.mergePasses.Add(1)
		s.log.Debug("extsort: merge pass", "consumer", s.consumer, "runs", passRuns, "rows", run.rows)
	}
	return nil
}

// mergePass merges every row of sub into a new run through the scratch
// buffer, loading the sources' next batches as they run out, and releases
// the sources. The caller does not hold the lock (see openRuns).
func (s *Sorter) mergePass(sub *merger) (*runFile, error) {
	s.lock()
	rw, err := s.createRunLocked()
	s.unlock()
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
