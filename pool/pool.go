package pool

import "fmt"

// Pool is a memory-accounting policy shared by many reservations. It tracks
// declared bytes only; it allocates nothing. Every implementation in this
// package is safe for concurrent use by multiple goroutines.
//
// Call ordering is part of the contract (see the package doc): inside
// TryGrow and Grow, r.Size() is the reservation's size before the request;
// inside Shrink it is the size after. Zero-byte calls reach the pool.
// Implementations never call back into the Reservation's mutating methods.
type Pool interface {
	// Name is a short, stable identifier of the policy ("greedy", "fair", …).
	Name() string
	// Register is called once per Consumer.Register; later Grow calls are
	// needed to reserve anything.
	Register(c *Consumer)
	// Unregister is called when the last reservation of a registration is
	// closed, always after that reservation's final Shrink.
	Unregister(c *Consumer)
	// Grow records n more bytes for r. It must always succeed, even past a
	// limit; a pool that borrows upstream records a short grant as overcommit.
	Grow(r *Reservation, n int64)
	// Shrink records that r gave back n bytes. It is infallible.
	Shrink(r *Reservation, n int64)
	// TryGrow records n more bytes for r, or returns an error and records
	// nothing. Refusals wrap ErrResourcesExhausted; other failures (an
	// upstream error) do not.
	TryGrow(r *Reservation, n int64) error
	// Reserved is the number of bytes currently recorded.
	Reserved() int64
	// Limit is the pool's configured ceiling.
	Limit() Limit
	// String is a stable description that appears inside refusal messages,
	// in DataFusion's forms, e.g. "greedy(used: 95.0 B, pool_size: 100.0 B)".
	String() string
}

// LimitKind says whether a pool has a ceiling.
type LimitKind int

const (
	// Unknown means the pool cannot tell (the default of DataFusion's trait).
	Unknown LimitKind = iota
	// Infinite means the pool never refuses.
	Infinite
	// Finite means the pool refuses TryGrow past Limit.Bytes.
	Finite
)

// Limit describes a pool's ceiling. The zero Limit is {Kind: Unknown}.
type Limit struct {
	Kind  LimitKind
	Bytes int64 // meaningful only when Kind == Finite
}

// String renders the limit as DataFusion's MemoryLimit debug form.
func (l Limit) String() string {
	switch l.Kind {
	case Infinite:
		return "Infinite"
	case Finite:
		return fmt.Sprintf("Finite(%d)", l.Bytes)
	default:
		return "Unknown"
	}
}

// Upstream is where the unified pools borrow bytes from: Spark's
// TaskMemoryManager over JNI, or the in-process arbiter.Arbiter.
//
// Acquire may block (Spark waits until the task holds 1/2N of the pool) and
// may call Reclaim on the calling goroutine before returning (Spark spills
// other consumers, and finally the requester, on the calling thread). So no
// caller may hold a lock that Reclaim or a Spiller needs across Acquire.
type Upstream interface {
	// Acquire asks for n > 0 bytes and returns how many were granted. A
	// well-behaved upstream grants 0 ≤ granted ≤ n; callers clamp anyway. On
	// error nothing was granted.
	Acquire(n int64) (granted int64, err error)
	// Release gives back n > 0 bytes previously granted and not yet released.
	// On error nothing was released: the caller still holds the bytes (the
	// unified pools keep them as slack and hand them back later).
	Release(n int64) error
}

// Spiller frees memory held by one consumer when its pool is asked to
// reclaim (Spark's MemoryConsumer.spill). Spill must shrink the consumer's
// reservations before returning and report how many bytes it freed; 0 means
// it cannot spill (any more). It runs on the goroutine that asked for memory,
// possibly inside an Upstream.Acquire: it must not wait for goroutines that
// may themselves be blocked acquiring memory.
type Spiller interface {
	Spill(target int64) (freed int64, err error)
}

// SpillerFunc adapts a function to the Spiller interface.
type SpillerFunc func(target int64) (int64, error)

// Spill calls f(target).
func (f SpillerFunc) Spill(target int64) (int64, error) { return f(target) }

// Reclaimer is implemented by the unified pools: it is what Spark's
// spill(size, trigger) on the pool's JVM consumer calls. Reclaim returns
// slack first, then asks spillable consumers (largest first) to spill, until
// target bytes have been released upstream; it returns exactly the bytes
// released upstream during the call.
type Reclaimer interface {
	Reclaim(target int64) (freed int64, err error)
}

// Unwrapper is implemented by decorators (TrackConsumers, Logging) so that
// As can reach the pool they wrap.
type Unwrapper interface {
	Unwrap() Pool
}

// As finds the first pool in p's decorator chain that is a T, the way
// errors.As walks an error chain. Use it to reach a unified pool's Reclaim or
// Stats through TrackConsumers and Logging.
func As[T any](p Pool) (T, bool) {
	for p != nil {
		if t, ok := p.(T); ok {
			return t, true
		}
		u, ok := p.(Unwrapper)
		if !ok {
			break
		}
		p = u.Unwrap()
	}
	var zero T
	return zero, false
}
