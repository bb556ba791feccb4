package ffi

import (
	"fmt"
	"log/slog"
)

// Option configures NewAllocator.
type Option func(*config)

type config struct {
	sites  bool
	depth  int
	chunk  int64
	policy ImportPolicy
	logger *slog.Logger // nil: slog.Default() when the allocator is made
}

func defaultConfig() config { return config{depth: 16} }

// WithAllocationSites records the call stack of every allocation (off by
// default). A leak report then groups live buffers by stack, sorted by bytes,
// and names the allocating function: the first frame outside nativepool's
// own packages, arrow-go and the runtime (or the foreign caller given to
// WithCaller, for a stack that is all ours). It costs a runtime.Callers per
// Allocate (see bench/RESULTS.md); use it in tests and when hunting a leak.
func WithAllocationSites(on bool) Option { return func(c *config) { c.sites = on } }

// WithSiteDepth sets how many frames WithAllocationSites keeps per stack
// (default 16, at most 64). It panics outside 1..64.
func WithSiteDepth(frames int) Option {
	if frames < 1 || frames > maxSiteDepth {
		panic(fmt.Sprintf("ffi: WithSiteDepth(%d): outside 1..%d", frames, maxSiteDepth))
	}
	return func(c *config) { c.depth = frames }
}

// WithChunkSize makes the allocator take its reservation in blocks of n
// bytes and hand buffers out of that slack, instead of calling the
// reservation for every buffer (the default, n = 0: the reservation holds
// exactly the bytes allocated). Slack above 2n is given back on Free, down
// to n; Close gives back all of it. Allocated() ≤ reserved still holds at
// every instant; the difference is Snapshot().Slack. It panics if n < 0.
func WithChunkSize(n int64) Option {
	if n < 0 {
		panic(fmt.Sprintf("ffi: WithChunkSize(%d): negative size", n))
	}
	return func(c *config) { c.chunk = n }
}

// WithImportPolicy says who pays for imported buffers; see ImportPolicy.
func WithImportPolicy(p ImportPolicy) Option {
	return func(c *config) { c.policy = p }
}

// WithLogger sets where the allocator logs what it cannot return as an
// error: leaks at Close, panics recovered inside a C release callback, frees
// after Close. The default is slog.Default() as it is when the allocator is
// made.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// ImportPolicy says which side of the C Data Interface pays for the buffers
// of an imported array while Go holds them. The package doc explains the
// rule: the producer pays.
type ImportPolicy int

const (
	// ProducerCharges (the default) leaves the charge with the producer: its
	// allocator (the JVM's BufferAllocator, for Spark) keeps the bytes
	// charged until Go releases the last reference and the producer's
	// release callback runs. Go tracks the bytes (Snapshot.Imported, leak
	// reports) and charges nothing.
	ProducerCharges ImportPolicy = iota
	// ImporterCharges charges imported bytes to this allocator's reservation
	// until Go releases the last reference, past the pool's limit if need be
	// (the bytes exist already: refusing them would only make the books
	// wrong). Use it when the producer does not account its memory to the
	// same budget, for example a C library, or a JVM root allocator without
	// a Spark-charging listener (Comet's CometArrowAllocator).
	ImporterCharges
)

// String names the policy.
func (p ImportPolicy) String() string {
	switch p {
	case ProducerCharges:
		return "ProducerCharges"
	case ImporterCharges:
		return "ImporterCharges"
	default:
		return fmt.Sprintf("ImportPolicy(%d)", int(p))
	}
}
