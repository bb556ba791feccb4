// Command sortdemo runs the extsort external sort over generated rows on
// one of nativepool's pools, with the arbiter.Arbiter standing in for
// Spark's memory manager under the unified pools, and prints a short report:
// rows, correctness, spills (self-initiated and requested), peak reserved,
// peak allocated, peak RSS growth and elapsed time. With -samples it also
// writes reserved, allocated, RSS and held bytes every 50 ms as CSV, which
// examples/chart draws.
//
//	go run ./examples/sort/cmd/sortdemo -rows 4000000 -budget 16MiB -pool fair_unified -compete 8MiB -samples /tmp/s.csv
//	go run ./examples/chart -in /tmp/s.csv -out /tmp/s.png
package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"github.com/nativepool/nativepool/arbiter"
	extsort "github.com/nativepool/nativepool/examples/sort"
	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/pool"
)

func main() {
	var cfg config
	flag.Int64Var(&cfg.rows, "rows", 4_000_000, "rows to generate and sort")
	flag.IntVar(&cfg.batch, "batch", 8192, "rows per input batch")
	flag.IntVar(&cfg.outRows, "out-rows", extsort.DefaultBatchRows, "rows per output and spill batch")
	budget := flag.String("budget", "16MiB", "memory budget (arbiter size for unified pools, pool size otherwise)")
	chunk := flag.String("chunk", "1MiB", "unified pools: bytes borrowed from the arbiter at a time (0 = exact, like Comet)")
	compete := flag.String("compete", "0", "bytes a second consumer of the task grabs halfway through the input and holds until it ends (0 = none)")
	flag.StringVar(&cfg.pool, "pool", "fair_unified", "pool kind: fair_unified, greedy_unified, fair or greedy")
	flag.Int64Var(&cfg.keys, "keys", 0, "key range [0, keys); 0 = all of int64")
	flag.Uint64Var(&cfg.seed, "seed", 1, "generator seed")
	flag.StringVar(&cfg.samples, "samples", "", "write a CSV of t_ms,reserved,allocated,rss,held every 50 ms to this file")
	flag.StringVar(&cfg.tmp, "tmp", "", "directory for run files (default: the system temp dir)")
	verbose := flag.Bool("v", false, "log every spill")
	flag.Parse()
	var err error
	if cfg.budget, err = parseBytes(*budget); err == nil {
		if cfg.chunk, err = parseBytes(*chunk); err == nil {
			cfg.compete, err = parseBytes(*compete)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortdemo:", err)
		os.Exit(2)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	rep, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortdemo:", err)
		os.Exit(1)
	}
	fmt.Print(rep)
	if !rep.correct {
		os.Exit(1)
	}
}

type config struct {
	rows           int64
	batch, outRows int
	budget, chunk  int64
	compete        int64
	pool           string
	keys           int64
	seed           uint64
	samples, tmp   string
	logger         *slog.Logger
}

// stack is the pool the sorter uses, with what the report and the sampler
// read from it.
type stack struct {
	pool    pool.Pool
	held    func() int64 // bytes borrowed upstream (unified) or reserved (standalone)
	compete func(n int64) (release func(), err error)
	close   func() error
}

func newStack(cfg config) (*stack, error) {
	switch cfg.pool {
	case "fair_unified", "greedy_unified":
		arb := arbiter.New(cfg.budget, arbiter.WithLogger(cfg.logger))
		task := arb.NewTask(context.Background(), "task 0")
		up := task.NewConsumer("nativepool", nil)
		var p pool.Pool
		if cfg.pool == "fair_unified" {
			p = pool.NewFairUnified(up, cfg.budget, pool.WithChunkSize(cfg.chunk), pool.WithName("task 0"))
		} else {
			p = pool.NewGreedyUnified(up, pool.WithChunkSize(cfg.chunk), pool.WithName("task 0"))
		}
		u, _ := pool.As[pool.Unified](p)
		up.SetReclaimer(u)
		return &stack{
			pool: p,
			held: func() int64 { return u.Stats().Held },
			compete: func(n int64) (func(), error) {
				// Another consumer of the same task, as a Spark-side
				// aggregation would be: the arbiter spills the sorter for it.
				c := task.NewConsumer("competitor", nil)
				got, err := c.Acquire(n)
				if err != nil {
					return nil, err
				}
				return func() { _ = c.Release(got) }, nil
			},
			close: func() error {
				err := u.Close()
				task.Close()
				arb.Close()
				return err
			},
		}, nil
	case "fair", "greedy":
		p := pool.NewFair(cfg.budget)
		if cfg.pool == "greedy" {
			p = pool.NewGreedy(cfg.budget)
		}
		return &stack{
			pool: p,
			held: p.Reserved,
			compete: func(n int64) (func(), error) {
				// A standalone pool cannot ask the sorter to spill; the
				// competitor takes what is free and the sorter spills on its
				// next refusal.
				r := pool.NewConsumer("competitor").Register(p)
				r.Grow(0)
				free := max(min(n, p.Limit().Bytes-p.Reserved()), 0)
				if err := r.TryGrow(free); err != nil {
					r.Close()
					return nil, err
				}
				return r.Close, nil
			},
			close: func() error { return nil },
		}, nil
	}
	return nil, fmt.Errorf("unknown -pool %q (want fair_unified, greedy_unified, fair or greedy)", cfg.pool)
}

// report is what run prints.
type report struct {
	cfg      config
	correct  bool
	checkErr error
	stats    extsort.Stats
	baseRSS  int64
	peakRSS  int64
	elapsed  time.Duration
	samples  int
}

func (r report) String() string {
	var b strings.Builder
	verdict := "OK (sorted, same multiset of rows)"
	if !r.correct {
		verdict = "FAILED: " + r.checkErr.Error()
	}
	growth := r.peakRSS - r.baseRSS
	ratio := "n/a"
	if r.stats.PeakReserved > 0 {
		ratio = fmt.Sprintf("%.2f", float64(growth)/float64(r.stats.PeakReserved))
	}
	fmt.Fprintf(&b, "sortdemo: %d rows, pool %s, budget %s, chunk %s, compete %s\n", r.cfg.rows, r.cfg.pool,
		pool.HumanReadableSize(r.cfg.budget), pool.HumanReadableSize(r.cfg.chunk), pool.HumanReadableSize(r.cfg.compete))
	fmt.Fprintf(&b, "  correctness        %s\n", verdict)
	fmt.Fprintf(&b, "  rows in / out      %d / %d\n", r.stats.RowsIn, r.stats.RowsOut)
	fmt.Fprintf(&b, "  spills             %d self-initiated, %d requested by the pool (%d requests)\n", r.stats.SelfSpills, r.stats.RequestedSpills, r.stats.SpillRequests)
	fmt.Fprintf(&b, "  runs               %d files, %d merge passes, %s spilled (%d rows)\n", r.stats.Runs, r.stats.MergePasses, pool.HumanReadableSize(r.stats.SpilledBytes), r.stats.SpilledRows)
	fmt.Fprintf(&b, "  peak reserved      %s\n", pool.HumanReadableSize(r.stats.PeakReserved))
	fmt.Fprintf(&b, "  peak allocated     %s\n", pool.HumanReadableSize(r.stats.PeakAllocated))
	fmt.Fprintf(&b, "  peak RSS growth    %s over a baseline of %s (growth / peak reserved = %s)\n", pool.HumanReadableSize(growth), pool.HumanReadableSize(r.baseRSS), ratio)
	fmt.Fprintf(&b, "  elapsed            %v\n", r.elapsed.Round(time.Millisecond))
	if r.cfg.samples != "" {
		fmt.Fprintf(&b, "  samples            %d rows in %s\n", r.samples, r.cfg.samples)
	}
	return b.String()
}

func run(cfg config) (rep report, err error) {
	rep.cfg = cfg
	st, err := newStack(cfg)
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, st.close()) }()
	s, err := extsort.New(st.pool, extsort.Options{BatchRows: cfg.outRows, TempDir: cfg.tmp, Logger: cfg.logger})
	if err != nil {
		return rep, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()

	rep.baseRSS, _ = ffi.ReadRSS()
	smp := startSampler(s, st.held, cfg.samples)
	start := time.Now()

	g := extsort.NewGenerator(cfg.seed, cfg.keys)
	// The "scan": input batches are not the sorter's memory. C memory, so a
	// released batch leaves RSS at once instead of waiting for a GC.
	in := mallocator.NewMallocator()
	var release func()
	for pushed := int64(0); pushed < cfg.rows; {
		n := int(min(int64(cfg.batch), cfg.rows-pushed))
		b := g.Next(in, n)
		err := s.Push(b)
		b.Release()
		if err != nil {
			return rep, err
		}
		pushed += int64(n)
		if cfg.compete > 0 && release == nil && pushed >= cfg.rows/2 {
			if release, err = st.compete(cfg.compete); err != nil {
				return rep, fmt.Errorf("competitor: %w", err)
			}
		}
	}
	if release != nil {
		release()
	}
	if err := s.Finish(); err != nil {
		return rep, err
	}
	var v extsort.Verifier
	for {
		b, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, err
		}
		err = v.AddBatch(b)
		b.Release()
		if err != nil {
			return rep, err
		}
	}
	rep.elapsed = time.Since(start)
	rep.stats = s.Stats()
	rep.checkErr = v.Check(g.Fingerprint())
	rep.correct = rep.checkErr == nil
	rep.peakRSS, rep.samples, err = smp.stop()
	return rep, err
}

// sampler records reserved, allocated, RSS and held bytes every 50 ms, and
// the peak RSS, until stop.
type sampler struct {
	done    chan struct{}
	wg      sync.WaitGroup
	peakRSS int64
	rows    int
	err     error
}

func startSampler(s *extsort.Sorter, held func() int64, path string) *sampler {
	smp := &sampler{done: make(chan struct{})}
	var w *csv.Writer
	var f *os.File
	if path != "" {
		if f, smp.err = os.Create(path); smp.err == nil {
			w = csv.NewWriter(f)
			smp.err = w.Write([]string{"t_ms", "reserved", "allocated", "rss", "held"})
		}
	}
	start := time.Now()
	sample := func() {
		rss, _ := ffi.ReadRSS()
		smp.peakRSS = max(smp.peakRSS, rss)
		if w == nil || smp.err != nil {
			return
		}
		smp.rows++
		smp.err = w.Write([]string{
			strconv.FormatInt(time.Since(start).Milliseconds(), 10),
			strconv.FormatInt(s.Reservation().Size(), 10),
			strconv.FormatInt(s.Allocator().Allocated(), 10),
			strconv.FormatInt(rss, 10),
			strconv.FormatInt(held(), 10),
		})
	}
	smp.wg.Add(1)
	go func() {
		defer smp.wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			sample()
			select {
			case <-smp.done:
				sample()
				if w != nil {
					w.Flush()
					smp.err = errors.Join(smp.err, w.Error(), f.Close())
				}
				return
			case <-t.C:
			}
		}
	}()
	return smp
}

// stop ends sampling and returns the peak RSS, the CSV rows written and
// any error writing them.
func (smp *sampler) stop() (int64, int, error) {
	close(smp.done)
	smp.wg.Wait()
	return smp.peakRSS, smp.rows, smp.err
}

// parseBytes reads a byte count with an optional KiB/MiB/GiB (or K/M/G)
// suffix.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad byte count %q (want e.g. 64MiB)", s)
	}
	return n * mult, nil
}
