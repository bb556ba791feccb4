// Package taskshared keeps one memory pool per Spark task attempt, shared by
// every native plan of that task, and carries the current task through Go
// engine code.
//
// # Why
//
// One Spark task can run several native plans at once (union, coalesce,
// collect-limit, take-ordered, native writes). If each plan had its own
// pool, the task could use its budget once per plan; Comet measured about 2×
// (apache/datafusion-comet#3921, fixed by #3924). The Registry hands every
// plan of a task a Handle to the same pool.
//
// # Lifetimes are refcounts; the GC only detects leaks
//
// A task's entry lives while any Handle of it is open: Registry.Acquire adds
// a reference, Handle.Close drops it, and the last Close closes the pool (a
// pool with a Close() error method, such as a unified pool, returns
// everything it borrowed from Spark there) and then removes the entry.
// Releasing a task's bytes to Spark must happen at a known moment on a
// thread that can call the JVM, so weak pointers and finalizers never decide it
// (a cleanup runs on the runtime's own goroutine, at a moment nobody chooses):
// runtime.AddCleanup only reports a Handle that was dropped without Close,
// and then releases its reference.
//
// # A replacement waits for teardown
//
// Between the last reference dropping and the end of the pool's Close, the
// entry stays in the registry, tearing down. A new plan of the same task
// that arrives then (the drop race of apache/datafusion-comet#5212 item
// (d)) waits on a condition variable until that Close has returned (or
// panicked) and the entry is gone, and only then creates a new pool: Comet's
// condvar registry (the #5613 line). The reason is Spark's books: the old
// pool's final release lowers the task's memoryForTask entry, possibly to 0
// (which removes it); a replacement created earlier could have an acquire
// parked in Spark under it, and wake to a task entry that release zeroed. A
// pool's Close must not acquire its own task's pool: it would wait for
// itself.
//
// Removal is still compare-and-delete: the last Close removes the task's
// entry only if the registry still maps the task to that same entry (as
// #5494 does), which keeps removal safe even though no replacement can be
// registered before it.
//
// # Differences from Comet
//
//   - Explicit refcounts on a Handle instead of Arc/Weak: deterministic, and
//     a Handle that is never closed is reported with its task id.
//   - A second plan asking for a different pool (AcquireSpec with another
//     Spec) gets an error wrapping ErrSpecMismatch instead of silently
//     sharing the first plan's pool (Comet's key ignores the pool type).
//   - create runs outside the registry lock, so it may block or call the
//     JVM; concurrent first plans of one task wait for a single create
//     instead of running it twice (Comet ran it under its global lock, and
//     asked that create never block). The same condition variable serves
//     plans waiting for a create and plans waiting for a teardown.
//
// # The current task
//
// Run, Current and Go carry a task's Handle through Go engine code on
// goroutine-local storage (github.com/timandy/routine, inheritable into
// goroutines started with Go). The variable behind them is package-level
// state and, with the Registry the JNI bridge keeps, part of the process
// registry: the only global state nativepool allows. See Run for the JNI
// pitfall. The demo's Go engine makes the task of each native call current
// this way for the duration of the call (examples/spark/native/task.go).
package taskshared
