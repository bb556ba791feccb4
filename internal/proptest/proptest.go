// Package proptest gives the project's property tests one seed rule: each
// run draws a fresh seed and logs it, and setting NATIVEPOOL_PROP_SEED
// replays a logged one. It is ordinary code (not a _test.go file) so that
// every package's tests can import it; it is for tests only.
package proptest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// SeedEnv names the environment variable that replays a logged seed.
const SeedEnv = "NATIVEPOOL_PROP_SEED"

// Seed returns the seed for a property test: SeedEnv's value if set (a
// malformed value fails t), else the current time. It logs the seed with
// the command line that replays it.
func Seed(t testing.TB) int64 {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv(SeedEnv); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", SeedEnv, s, err)
		}
		seed = v
	}
	t.Logf("gopter seed %d (replay with %s=%d)", seed, SeedEnv, seed)
	return seed
}
