package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// loggingPool is Comet's LoggingMemoryPool as a structured slog decorator.
// It is safe for concurrent use if the inner pool and the logger's handler
// are (slog handlers are required to be).
type loggingPool struct {
	watchThrough
	inner  Pool
	logger *slog.Logger
}

// NewLogging wraps inner so that every pool operation is logged as one
// structured record on logger (slog.Default() if nil), the way Comet's
// spark.comet.debug.memory does:
//
//   - "register" and "unregister" at Info, with the consumer;
//   - "grow" and "shrink" at Info, with the bytes and the reservation's size
//     as the pool sees it (before the grow, after the shrink);
//   - "try_grow" at Info with outcome "ok", or at Warn with outcome
//     "refused" (the error wraps ErrResourcesExhausted) or "error" and the
//     error itself.
//
// Every record carries pool (the inner pool's Name), consumer and
// consumer_id. As in Comet, register, unregister, grow and shrink are
// logged before they are delegated and try_grow after. Errors from inner
// are returned unchanged. Peak and OnThreshold are forwarded to inner.
// Records are built only when the logger is enabled at their level, so a
// logger that discards costs little. It panics if inner is nil.
func NewLogging(inner Pool, logger *slog.Logger) Pool {
	if inner == nil {
		panic("pool: NewLogging(nil): nil inner pool")
	}
	if logger == nil {
		logger = slog.Default()
	}
	p := &loggingPool{inner: inner, logger: logger}
	p.watchThrough.init("logging", inner)
	return p
}

// Unwrap returns the pool this one decorates.
func (p *loggingPool) Unwrap() Pool { return p.inner }

// Name implements Pool.
func (p *loggingPool) Name() string { return "logging" }

// Register implements Pool.
func (p *loggingPool) Register(c *Consumer) {
	p.log(slog.LevelInfo, "register", c)
	p.inner.Register(c)
}

// Unregister implements Pool.
func (p *loggingPool) Unregister(c *Consumer) {
	p.log(slog.LevelInfo, "unregister", c)
	p.inner.Unregister(c)
}

// Grow implements Pool.
func (p *loggingPool) Grow(r *Reservation, n int64) {
	p.logGrow(r, n)
	p.inner.Grow(r, n)
	p.afterIncrease()
}

// Shrink implements Pool.
func (p *loggingPool) Shrink(r *Reservation, n int64) {
	p.logShrink(r, n)
	p.inner.Shrink(r, n)
	p.afterDecrease()
}

func (p *loggingPool) logGrow(r *Reservation, n int64) {
	p.log(slog.LevelInfo, "grow", r.Consumer(),
		slog.Int64("bytes", n), slog.Int64("reservation", r.Size()))
}

func (p *loggingPool) logShrink(r *Reservation, n int64) {
	p.log(slog.LevelInfo, "shrink", r.Consumer(),
		slog.Int64("bytes", n), slog.Int64("reservation", r.Size()))
}

// TryGrow implements Pool; the inner pool's error is returned unchanged.
func (p *loggingPool) TryGrow(r *Reservation, n int64) error {
	err := p.inner.TryGrow(r, n)
	if err == nil {
		p.log(slog.LevelInfo, "try_grow", r.Consumer(),
			slog.Int64("bytes", n), slog.Int64("reservation", r.Size()), slog.String("outcome", "ok"))
		p.afterIncrease()
		return nil
	}
	outcome := "error"
	if errors.Is(err, ErrResourcesExhausted) {
		outcome = "refused"
	}
	p.log(slog.LevelWarn, "try_grow", r.Consumer(),
		slog.Int64("bytes", n), slog.Int64("reservation", r.Size()),
		slog.String("outcome", outcome), slog.Any("error", err))
	return err
}

// log emits one record if the logger is enabled at level. The attrs are
// built by the caller; they do not escape unless the record is emitted.
func (p *loggingPool) log(level slog.Level, op string, c *Consumer, attrs ...slog.Attr) {
	ctx := context.Background()
	if !p.logger.Enabled(ctx, level) {
		return
	}
	all := make([]slog.Attr, 0, 3+len(attrs))
	all = append(all,
		slog.String("pool", p.inner.Name()),
		slog.String("consumer", c.Name()),
		slog.Uint64("consumer_id", c.ID()))
	all = append(all, attrs...)
	p.logger.LogAttrs(ctx, level, op, all...)
}

// Reserved implements Pool by delegation.
func (p *loggingPool) Reserved() int64 { return p.inner.Reserved() }

// Limit implements Pool by delegation.
func (p *loggingPool) Limit() Limit { return p.inner.Limit() }

// String implements Pool: "logging(inner_pool: …)". (Comet's form,
// "LoggingMemoryPool(task=…)", omits the inner pool; a task id belongs in
// the logger's attributes here.)
func (p *loggingPool) String() string {
	return fmt.Sprintf("logging(inner_pool: %s)", p.inner)
}

var (
	_ Pool      = (*loggingPool)(nil)
	_ Watcher   = (*loggingPool)(nil)
	_ Unwrapper = (*loggingPool)(nil)
)
