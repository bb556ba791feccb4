package jni

import (
	"errors"
	"fmt"

	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// errInvalidArgument is wrapped by the bridge's own argument checks (an
// unknown pool kind, a negative pool size): IllegalArgumentException.
var errInvalidArgument = errors.New("invalid argument")

// throwKind is the Java exception an export throws for a failure.
type throwKind int

const (
	throwNone            throwKind = iota // success: nothing thrown
	throwIllegalArgument                  // java.lang.IllegalArgumentException
	throwIllegalState                     // java.lang.IllegalStateException
	throwRuntime                          // java.lang.RuntimeException
	throwJava                             // the original throwable of a JavaException
)

func (k throwKind) String() string {
	switch k {
	case throwNone:
		return "none"
	case throwIllegalArgument:
		return "IllegalArgumentException"
	case throwIllegalState:
		return "IllegalStateException"
	case throwRuntime:
		return "RuntimeException"
	case throwJava:
		return "original throwable"
	default:
		return fmt.Sprintf("throwKind(%d)", int(k))
	}
}

// classify maps a Go error to the Java exception jni/API.md prescribes:
//
//   - a Java exception raised inside an upcall: that throwable, rethrown;
//   - a bad size or argument, a never-issued or wrong-type handle:
//     IllegalArgumentException;
//   - a closed or stale handle, a closed pool or reservation, a second open
//     of a task with another configuration: IllegalStateException;
//   - anything else (including a refusal outside tryGrow0, which no other
//     export can produce): RuntimeException.
func classify(err error) throwKind {
	var je *JavaException
	switch {
	case err == nil:
		return throwNone
	case errors.As(err, &je):
		return throwJava
	case errors.Is(err, pool.ErrInvalidSize), errors.Is(err, errInvalidHandle), errors.Is(err, errInvalidArgument):
		return throwIllegalArgument
	case errors.Is(err, errStaleHandle), errors.Is(err, pool.ErrClosed), errors.Is(err, taskshared.ErrSpecMismatch):
		return throwIllegalState
	default:
		return throwRuntime
	}
}

func isInvalidHandle(err error) bool { return errors.Is(err, errInvalidHandle) }
func isStaleHandle(err error) bool   { return errors.Is(err, errStaleHandle) }

// failure is what an export throws: nothing, a new exception of kind with
// msg, or (kind throwJava) the original throwable of java.
type failure struct {
	kind throwKind
	msg  string
	java *JavaException
}

// settle decides what an export throws, given the error its call returned.
// A Java exception inside err always wins, because it is what Spark raised
// (a task kill, an OOM) and the rest of err is only its consequence: the
// first one found (errors.As's order); every other one in err is discarded
// (its global ref deleted). Without one, err is classified.
func settle(err error) failure {
	if err == nil {
		return failure{}
	}
	var chosen *JavaException
	for _, e := range javaExceptions(err) {
		if chosen == nil {
			chosen = e
		} else {
			e.discard()
		}
	}
	if chosen != nil {
		return failure{kind: throwJava, msg: chosen.Error(), java: chosen}
	}
	k := classify(err)
	if k == throwNone {
		return failure{}
	}
	return failure{kind: k, msg: err.Error()}
}
