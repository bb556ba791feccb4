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
// a reference, Handle.Close drops it, and the last Close removes the entry
// and then closes the pool (a pool with a Close() error method, such as a
// unified pool, returns everything it borrowed from Spark there). Releasing
// a task's bytes to Spark must happen at a known moment on a thread that can
// call the JVM, so weak pointers and finalizers never decide it
// (reference/go-jni.md §3.4): runtime.AddCleanup only reports a Handle that
// was dropped without Close, and then releases its reference.
//
// Removal is compare-and-delete: the last Close removes the task's entry only
// if the registry still maps the task to that same entry. Between the last
// reference dropping and the removal, a new plan of the same task may find
// the dying entry and register a replacement; the old entry must not remove
// it (the drop race of apache/datafusion-comet#5212 item (d), closed the
// same way by #5494).
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
//     asked that create never block).
//
// # The current task
//
// Run, Current and Go carry a task's Handle through Go engine code on
// goroutine-local storage (github.com/timandy/routine, inheritable into
// goroutines started with Go). The variable behind them is package-level
// state and, with the Registry the JNI bridge keeps, part of the process
// registry: the only global state nativepool allows. See Run for the JNI
// pitfall.
package taskshared
