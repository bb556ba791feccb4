package taskshared

import "github.com/timandy/routine"

// current holds the task Handle of the running goroutine. It is
// package-level state on purpose: goroutine-local storage is process-wide by
// nature, and it belongs to the process registry, the only global state
// nativepool allows. Values are copied into goroutines started by Go (and by
// routine.Go, routine.GoWait and routine.WrapTask), never into plain go
// statements.
var current = routine.NewInheritableThreadLocal[*Handle]()

// Run makes h the current task while fn runs on this goroutine, then
// restores whatever was current before (removing the value if nothing was),
// also when fn panics. It does not Close h.
//
// A JNI pitfall: a Java thread calling into Go runs on a goroutine the
// runtime keeps bound to that thread and later reuses for unrelated Java
// threads, with its goroutine-locals intact. A value set in one JNI call is
// still visible in the next call on the same Java thread, and after the
// thread exits it leaks into a new, unrelated one. So every exported function
// that makes a task current must do it through Run (or remove the value in a
// defer) and never leave it set on return; better still, pass the Handle
// explicitly across the boundary.
func Run(h *Handle, fn func()) {
	prev := current.Get()
	current.Set(h)
	defer func() {
		if prev != nil {
			current.Set(prev)
		} else {
			current.Remove()
		}
	}()
	fn()
}

// Current returns the current task's Handle, if Run (or an inheriting Go)
// set one on this goroutine. The Handle is not a new reference: it is valid
// while the plan that opened it keeps it open.
func Current() (*Handle, bool) {
	h := current.Get()
	return h, h != nil
}

// Go starts fn on a new goroutine that inherits the current task (and every
// other routine inheritable goroutine-local). A panic in fn crashes the
// program, as it would in a plain go statement. The goroutine holds no
// reference of its own: it must finish before the plan closes its Handle.
func Go(fn func()) {
	task := routine.WrapWaitTask(func(routine.CancelToken) { fn() })
	go func() {
		task.Run()
		task.Get() // re-raises a panic of fn on this goroutine
	}()
}
