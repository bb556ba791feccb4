package bridge

import (
	"errors"
	"fmt"

	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// ErrInvalidArgument is wrapped by the bridge's own argument checks (an
// unknown pool kind, a negative pool size): IllegalArgumentException.
var ErrInvalidArgument = errors.New("invalid argument")

// ThrowKind is the Java exception an export throws for a failure.
type ThrowKind int

const (
	ThrowNone            ThrowKind = iota // success: nothing thrown
	ThrowIllegalArgument                  // java.lang.IllegalArgumentException
	ThrowIllegalState                     // java.lang.IllegalStateException
	ThrowRuntime                          // java.lang.RuntimeException
	ThrowJava                             // the original throwable of a JavaException
)

// String names the kind as the Java exception it throws.
func (k ThrowKind) String() string {
	switch k {
	case ThrowNone:
		return "none"
	case ThrowIllegalArgument:
		return "IllegalArgumentException"
	case ThrowIllegalState:
		return "IllegalStateException"
	case ThrowRuntime:
		return "RuntimeException"
	case ThrowJava:
		return "original throwable"
	default:
		return fmt.Sprintf("ThrowKind(%d)", int(k))
	}
}

// Classify maps a Go error to the Java exception jni/API.md prescribes:
//
//   - a Java exception raised inside an upcall: that throwable, rethrown;
//   - a bad size or argument, a never-issued or wrong-type handle:
//     IllegalArgumentException;
//   - a closed or stale handle, a closed pool or reservation, a second open
//     of a task with another configuration: IllegalStateException;
//   - anything else (including a refusal outside tryGrow0, which no other
//     export can produce): RuntimeException.
func Classify(err error) ThrowKind {
	var je *JavaException
	switch {
	case err == nil:
		return ThrowNone
	case errors.As(err, &je):
		return ThrowJava
	case errors.Is(err, pool.ErrInvalidSize), errors.Is(err, ErrInvalidHandle), errors.Is(err, ErrInvalidArgument):
		return ThrowIllegalArgument
	case errors.Is(err, ErrStaleHandle), errors.Is(err, pool.ErrClosed), errors.Is(err, taskshared.ErrSpecMismatch):
		return ThrowIllegalState
	default:
		return ThrowRuntime
	}
}

func isInvalidHandle(err error) bool { return errors.Is(err, ErrInvalidHandle) }
func isStaleHandle(err error) bool   { return errors.Is(err, ErrStaleHandle) }

// Failure is what an export throws: nothing, a new exception of Kind with
// Msg, or (Kind ThrowJava) the original throwable of Java, whose global ref
// the export takes (JavaException.Take), throws and deletes.
type Failure struct {
	Kind ThrowKind
	Msg  string
	Java *JavaException
}

// Settle decides what an export throws, given the error its call returned.
// A Java exception inside err always wins, because it is what Spark raised
// (a task kill, an OOM) and the rest of err is only its consequence: the
// first one found (errors.As's order); every other one in err is discarded
// (its global ref deleted). Without one, err is classified.
func Settle(err error) Failure {
	if err == nil {
		return Failure{}
	}
	var chosen *JavaException
	for _, e := range JavaExceptions(err) {
		if chosen == nil {
			chosen = e
		} else {
			e.Discard()
		}
	}
	if chosen != nil {
		return Failure{Kind: ThrowJava, Msg: chosen.Error(), Java: chosen}
	}
	k := Classify(err)
	if k == ThrowNone {
		return Failure{}
	}
	return Failure{Kind: k, Msg: err.Error()}
}
