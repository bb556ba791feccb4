// Command fairspill shows two spillable operators sharing a fair pool: when
// one is refused it spills its buffered rows to a temporary file, frees its
// reservation and retries. It prints the refusal (with TrackConsumers'
// report of the top consumers), the spill, a threshold crossing and the
// pool's high-water mark.
//
//	go run ./examples/fairspill     (or: make example)
package main

import (
	"bufio"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/nativepool/nativepool/pool"
)

const (
	poolSize = 64 << 10 // 64 KiB: each of the two spillers may hold 32 KiB
	rowSize  = 1 << 10
	rows     = 48 // per operator
)

// operator buffers rows in memory, accounted by its reservation, and
// spills them to a temporary file when the pool refuses more.
type operator struct {
	name     string
	res      *pool.Reservation
	buffered [][]byte
	spills   int
	spilled  int64    // bytes written to disk
	files    []string // spill files, read back by drain
	reported *bool    // shared: only the first refusal is printed
}

func newOperator(p pool.Pool, name string, reported *bool) *operator {
	c := pool.NewConsumer(name).WithCanSpill(true)
	return &operator{name: name, res: c.Register(p), reported: reported}
}

// add buffers one row, spilling first if the pool refuses it.
func (o *operator) add(row []byte) error {
	n := int64(len(row))
	err := o.res.TryGrow(n)
	if errors.Is(err, pool.ErrResourcesExhausted) {
		if !*o.reported {
			*o.reported = true
			fmt.Printf("\n%s was refused:\n%v\n\n", o.name, err)
		}
		if err := o.spill(); err != nil {
			return err
		}
		err = o.res.TryGrow(n)
		if err == nil && o.spills == 1 {
			fmt.Printf("%s: retry after spilling succeeded (%s reserved)\n", o.name, pool.HumanReadableSize(o.res.Size()))
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", o.name, err)
	}
	o.buffered = append(o.buffered, row)
	return nil
}

// spill writes the buffered rows to a temporary file and frees the
// reservation that paid for them.
func (o *operator) spill() error {
	f, err := os.CreateTemp("", "fairspill-"+o.name+"-*.bin")
	if err != nil {
		return err
	}
	defer f.Close()
	o.files = append(o.files, f.Name())
	w := bufio.NewWriter(f)
	var written int64
	for _, row := range o.buffered {
		n, err := w.Write(row)
		written += int64(n)
		if err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	o.spills++
	o.spilled += written
	if o.spills == 1 {
		fmt.Printf("%s: spilled %d rows (%s) to %s, freed %s\n", o.name, len(o.buffered),
			pool.HumanReadableSize(written), f.Name(), pool.HumanReadableSize(o.res.Free()))
	} else {
		o.res.Free()
	}
	o.buffered = o.buffered[:0]
	return nil
}

// drain reads the spilled rows back (where a real operator would merge
// them with the buffered ones), removes the files and closes the
// reservation. It returns the number of rows seen.
func (o *operator) drain() (int, error) {
	n := len(o.buffered)
	for _, name := range o.files {
		b, err := os.ReadFile(name)
		if err != nil {
			return n, err
		}
		n += len(b) / rowSize
		if err := os.Remove(name); err != nil {
			return n, err
		}
	}
	o.res.Close()
	return n, nil
}

func run() error {
	tracked := pool.NewTrackConsumers(pool.NewFair(poolSize), 5)
	fmt.Println("pool:", tracked)

	stop := tracked.OnThreshold(pool.Threshold{Level: 48 << 10}, func(c pool.Crossing) {
		dir := "fell below"
		if c.Up {
			dir = "rose to"
		}
		fmt.Printf("threshold: %s pool %s %s (%s reserved)\n", c.Pool, dir,
			pool.HumanReadableSize(c.Level), pool.HumanReadableSize(c.Reserved))
	})
	defer stop()

	var reported bool
	sort, agg := newOperator(tracked, "sort", &reported), newOperator(tracked, "hash-agg", &reported)
	for i := range rows {
		row := make([]byte, rowSize)
		row[0] = byte(i)
		for _, op := range []*operator{sort, agg} {
			if err := op.add(row); err != nil {
				return err
			}
		}
	}

	fmt.Println()
	fmt.Println("top consumers:\n" + tracked.ReportTop(5))
	for _, op := range []*operator{sort, agg} {
		spills, spilled, buffered := op.spills, op.spilled, op.res.Size()
		n, err := op.drain()
		if err != nil {
			return err
		}
		fmt.Printf("%s: %d spill(s), %s spilled, %s buffered, %d/%d rows read back\n", op.name, spills,
			pool.HumanReadableSize(spilled), pool.HumanReadableSize(buffered), n, rows)
	}
	fmt.Printf("high-water mark %s of %s; reserved after close %s\n",
		pool.HumanReadableSize(tracked.Peak()), pool.HumanReadableSize(poolSize),
		pool.HumanReadableSize(tracked.Reserved()))
	return nil
}

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal(err)
	}
}
