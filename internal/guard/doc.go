// Package guard is the pod guard: it keeps an executor's native memory from
// getting it killed for the memory everything else in its container takes.
//
// A container dies of the sum of what it holds: the JVM's heap, metaspace,
// threads, direct buffers and Netty chunks, page cache being written, and
// native memory. Native memory is the one part that can give way on
// demand: its consumers spill. The guard makes the kernel's limit a party
// to native admission and reclaim:
//
//   - It samples what the kernel kills on (the memory group's limit and the
//     memory it cannot reclaim; clean page cache never counts), more often
//     as the headroom shrinks, and earlier when the kernel notifies.
//   - Admission (Guard.Admit, a pool.Admission on every task pool): a
//     borrow from Spark that would take native memory's footprint, plus
//     everything resident outside it, into the reserve waits while the guard
//     makes room, so native memory grows only into memory the process has.
//     It is never refused: a refusal would fail the task of a consumer that
//     cannot spill at that moment. Growth a consumer can do without (a
//     sort's merge taking more runs at once: pool.Reservation.WithoutWaiting)
//     is answered at once instead (Guard.AdmitNow): refused where there is
//     no room, so that it never grows into memory the process does not have
//     while nothing native is left to spill.
//   - Reaction: when the headroom falls under the reserve (a burst outside
//     native memory), native consumers spill across every task pool,
//     largest first, and the bytes they free stay with their pools as
//     ballast, kept from Spark's other consumers while the pressure lasts;
//     then the Go runtime's idle heap goes back, then the C allocator's free
//     memory. The ballast goes back to Spark once the headroom is back.
//   - Writeback: spill files' dirty pages count until written, and the
//     kernel writes them on its own schedule (about 30 s), not a pod's.
//     With the headroom under four reserves and a quarter reserve of them
//     dirty, the guard has them written (Runtime.Writeback), before the
//     headroom is short and during an episode alike (Config.WriteBack).
//   - It never fails anything: a borrow waits at most Config.AdmitWait, Grow
//     still overcommits, and when nothing native is left to give it says so
//     once per episode and leaves the decision to the kernel.
//   - Every stretch of short headroom is an Episode: when it started and
//     ended, the figures, who spilled what, the reaction time.
//
// Where each job lives:
//
//	policy.go   Sample, Config: the arithmetic of headroom, admission, deficit, ballast release
//	guard.go    Guard: the sampling loop, admission, reaction, episodes and stats
//
// The package is pure Go with no I/O of its own: a Source reads the figures
// (the cgroup and the native side), Native makes the pools give way, and a
// Clock keeps time, so the policy is tested against fake readings and a
// fake clock.
package guard
