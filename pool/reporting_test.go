package pool_test

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/fakeupstream"
	"github.com/nativepool/nativepool/pool"
)

// The *Reporting forms move the same bytes as the plain forms and return
// what the plain forms only log: checked on each unified kind, bare and
// under the decorators the JNI bridge stacks on it (TrackConsumers over
// Logging), which must hand the failure through.
func reportingStacks(t *testing.T, up pool.Upstream) map[string]pool.Pool {
	t.Helper()
	out := map[string]pool.Pool{}
	for _, kind := range []string{"greedy", "fair"} {
		u := unified(t, kind, up, 1<<20, pool.WithChunkSize(0))
		out[kind+"_unified"] = u
		quiet := slog.New(slog.DiscardHandler)
		out["track(logging("+kind+"_unified))"] = pool.NewTrackConsumers(pool.NewLogging(unified(t, kind, up, 1<<20, pool.WithChunkSize(0)), quiet), 5)
	}
	return out
}

func TestGrowReportingRecordsTheBytesAndReturnsTheFailedAcquire(t *testing.T) {
	boom := errors.New("acquireMemory threw")
	for name := range reportingStacks(t, fakeupstream.New()) {
		t.Run(name, func(t *testing.T) {
			up := fakeupstream.New()
			p := reportingStacks(t, up)[name]
			r := pool.NewConsumer("c").Register(p)
			up.Reply(fakeupstream.Fail(boom))

			err := r.GrowReporting(100)

			require.ErrorIs(t, err, boom)
			assert.NotErrorIs(t, err, pool.ErrResourcesExhausted)
			assert.Equal(t, int64(100), r.Size(), "the grow happened: Grow never fails for want of memory")
			u, _ := pool.As[pool.Unified](p)
			assert.Equal(t, int64(100), u.Stats().Overcommit, "what upstream did not grant is overcommit")
			r.Close()
			assert.Zero(t, up.Held())
		})
	}
}

func TestShrinkFreeAndCloseReportingShrinkAndReturnTheFailedRelease(t *testing.T) {
	boom := errors.New("releaseMemory threw")
	ops := map[string]func(r *pool.Reservation) error{
		"ShrinkReporting": func(r *pool.Reservation) error { return r.ShrinkReporting(r.Size()) },
		"FreeReporting": func(r *pool.Reservation) error {
			n, err := r.FreeReporting()
			assert.Equal(t, int64(100), n)
			return err
		},
		"CloseReporting": func(r *pool.Reservation) error { return r.CloseReporting() },
	}
	for opName, op := range ops {
		for name := range reportingStacks(t, fakeupstream.New()) {
			t.Run(opName+"/"+name, func(t *testing.T) {
				up := fakeupstream.New()
				p := reportingStacks(t, up)[name]
				r := pool.NewConsumer("c").Register(p)
				require.NoError(t, r.GrowReporting(100))
				up.FailReleases(boom)

				err := op(r)

				require.ErrorIs(t, err, boom)
				assert.Zero(t, r.Size(), "the shrink happened")
				u, _ := pool.As[pool.Unified](p)
				assert.Equal(t, int64(100), u.Stats().Owed, "upstream kept nothing it did not release: the bytes are owed")
				up.FailReleases(nil)
				require.NoError(t, u.Close())
				assert.Zero(t, up.Held(), "the owed bytes went back at Close")
			})
		}
	}
}

func TestReportingFormsFailWhereThePlainFormsPanicAndChangeNothing(t *testing.T) {
	up := fakeupstream.New()
	for name, p := range reportingStacks(t, up) {
		t.Run(name, func(t *testing.T) {
			r := pool.NewConsumer("c").Register(p)
			require.ErrorIs(t, r.GrowReporting(-1), pool.ErrInvalidSize)
			require.NoError(t, r.GrowReporting(10))
			require.ErrorIs(t, r.ShrinkReporting(11), pool.ErrInvalidSize)
			require.ErrorIs(t, r.ShrinkReporting(-1), pool.ErrInvalidSize)
			assert.Equal(t, int64(10), r.Size())
			require.NoError(t, r.CloseReporting())
			require.ErrorIs(t, r.GrowReporting(1), pool.ErrClosed)
			require.ErrorIs(t, r.ShrinkReporting(0), pool.ErrClosed)
			require.NoError(t, r.CloseReporting(), "a second close is a no-op")
			assert.Zero(t, p.Reserved())
		})
	}
}

// A pool without an upstream has nothing to report: the forms behave as the
// plain ones.
func TestReportingFormsOnAPoolWithoutUpstreamReturnNil(t *testing.T) {
	p := pool.NewTrackConsumers(pool.NewGreedy(100), 5)
	r := pool.NewConsumer("c").Register(p)
	require.NoError(t, r.GrowReporting(150), "Grow goes past the limit")
	require.NoError(t, r.ShrinkReporting(50))
	n, err := r.FreeReporting()
	require.NoError(t, err)
	assert.Equal(t, int64(100), n)
	require.NoError(t, r.CloseReporting())
	assert.Zero(t, p.Reserved())
}

func TestReclaimReportingReturnsTheSkippedSpillersErrorAndReclaimDoesNot(t *testing.T) {
	diskFull := errors.New("disk full")
	for _, reporting := range []bool{false, true} {
		up := fakeupstream.New()
		p := unified(t, "greedy", up, 0, pool.WithChunkSize(0), pool.WithLogger(slog.New(slog.DiscardHandler)))
		broken := pool.NewConsumer("broken").WithSpiller(pool.SpillerFunc(func(int64) (int64, error) {
			return 0, diskFull
		})).Register(p)
		broken.Grow(500)
		good := &freeingSpiller{}
		g := pool.NewConsumer("good").WithSpiller(good).Register(p)
		good.rs = []*pool.Reservation{g}
		g.Grow(100)

		reclaim := p.Reclaim
		if reporting {
			reclaim = p.ReclaimReporting
		}
		freed, err := reclaim(100)

		assert.Equal(t, int64(100), freed, "the failing spiller is skipped either way")
		if reporting {
			require.ErrorIs(t, err, diskFull)
		} else {
			require.NoError(t, err)
		}
		broken.Close()
		g.Close()
	}
}
