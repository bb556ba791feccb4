package pool_test

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/nativepool/nativepool/pool"
)

// Two spillable operators share a fair pool: each may hold half. The
// refused one spills (frees its reservation) and retries.
func ExampleNewFair() {
	p := pool.NewFair(100)
	sort := pool.NewConsumer("sort").WithCanSpill(true).Register(p)
	defer sort.Close()
	join := pool.NewConsumer("join").WithCanSpill(true).Register(p)
	defer join.Close()

	fmt.Println(sort.TryGrow(50))
	err := sort.TryGrow(10)
	fmt.Println(errors.Is(err, pool.ErrResourcesExhausted))
	fmt.Println(err)

	sort.Free() // spill: write the buffered rows out, give the bytes back
	fmt.Println(sort.TryGrow(10), p.Reserved())
	// Output:
	// <nil>
	// true
	// Resources exhausted: Failed to allocate additional 10.0 B for sort with 50.0 B already allocated for this reservation - 50.0 B remain available for the total memory pool: fair(pool_size: 100.0 B)
	// <nil> 10
}

// A refusal through TrackConsumers names the largest consumers, as
// DataFusion's does. (Consumer IDs are process-wide; the example masks
// them.)
func ExampleNewTrackConsumers() {
	p := pool.NewTrackConsumers(pool.NewGreedy(1000), 2)
	scan := pool.NewConsumer("scan").Register(p)
	defer scan.Close()
	agg := pool.NewConsumer("agg").Register(p)
	defer agg.Close()
	scan.Grow(700)
	agg.Grow(200)

	err := agg.TryGrow(150)
	fmt.Println(regexp.MustCompile(`#\d+`).ReplaceAllString(err.Error(), "#ID"))
	for _, m := range p.Metrics() {
		fmt.Println(m.Name, m.Reserved, m.Peak)
	}
	// Output:
	// Resources exhausted: Additional allocation failed for agg with top memory consumers (across reservations) as:
	//   scan#ID(can spill: false) consumed 700.0 B, peak 700.0 B,
	//   agg#ID(can spill: false) consumed 200.0 B, peak 200.0 B.
	// Error: Failed to allocate additional 150.0 B for agg with 200.0 B already allocated for this reservation - 100.0 B remain available for the total memory pool: greedy(used: 900.0 B, pool_size: 1000.0 B)
	// scan 700 700
	// agg 200 200
}

// Every pool keeps its high-water mark and calls back when reserved bytes
// cross a level, with hysteresis on the way down: no polling.
func ExampleWatcher() {
	p := pool.NewGreedy(1 << 20)
	w := p.(pool.Watcher)
	stop := w.OnThreshold(pool.Threshold{Level: 800 << 10, Hysteresis: 100 << 10}, func(c pool.Crossing) {
		fmt.Printf("%s crossed %s (up=%t) at %s\n", c.Pool,
			pool.HumanReadableSize(c.Level), c.Up, pool.HumanReadableSize(c.Reserved))
	})
	defer stop()

	r := pool.NewConsumer("buffer").Register(p)
	r.Grow(900 << 10)
	r.Shrink(150 << 10) // 750 KiB: within the hysteresis band, no callback
	r.Shrink(100 << 10) // 650 KiB: below 700 KiB
	r.Close()
	fmt.Println("peak", pool.HumanReadableSize(w.Peak()))
	// Output:
	// greedy crossed 800.0 KB (up=true) at 900.0 KB
	// greedy crossed 800.0 KB (up=false) at 650.0 KB
	// peak 900.0 KB
}
