// Package arbiter emulates Spark's executor memory management in process:
// one executor-wide budget shared by concurrently running tasks, with the
// rules of Spark's ExecutionMemoryPool and TaskMemoryManager (a task holds
// at most 1/N of the budget, waits while it holds less than 1/2N, and makes
// its other consumers spill before it waits). It is not a pool: each of a
// task's consumers is a pool.Upstream, the thing a unified pool
// (pool.NewFairUnified, pool.NewGreedyUnified) borrows from, where inside a
// Spark executor the JNI bridge makes the TaskMemoryManager that upstream.
//
// It serves Go engines that run without a JVM (the embedded default
// upstream) and every test that needs Spark's behaviour without Spark:
//
//	a := arbiter.New(512 << 20)
//	task := a.NewTask(ctx, "task 7")
//	defer task.Close()
//	c := task.NewConsumer("native", nil)
//	p := pool.NewFairUnified(c, 256<<20)
//	u, _ := pool.As[pool.Unified](p)
//	c.SetReclaimer(u) // the task's spill loop reaches the pool's Reclaim
//
// Arbiter's documentation states the rules, the locks and where the
// arbiter differs from Spark.
//
// # Where each job lives
//
//	arbiter.go    Arbiter: the executor budget, N and the 1/N, 1/2N
//	              shares, the wait for memory, stats, Close
//	task.go       Task: one task's memory manager, its re-entrant
//	              monitor, the acquire and Spark's spill loop over the task's
//	              consumers, task Close
//	consumer.go   Consumer: one memory consumer of a task, the
//	              pool.Upstream a unified pool borrows from (Acquire, Release)
//
// The package imports pool and never the reverse.
package arbiter
