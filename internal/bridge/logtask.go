package bridge

import "log/slog"

// LogTaskKey is the key of the attribute that names a record's task
// attempt: an int64 (slog.Int64(LogTaskKey, taskAttemptID)). Every task
// pool logs through a logger carrying it (taskPool.logger), so records made
// for a task on any goroutine or thread (a spill on an attached Go thread, a
// release at the pool's close, an Arrow allocator's leak report) name their
// task. The JNI log handler (internal/logsink) moves it out of the
// attributes and into the "[task …]" prefix of the text that reaches
// SLF4J; other handlers print it as task=<id>.
const LogTaskKey = "task"

// LogTask is the attribute naming task attempt taskAttemptID.
func LogTask(taskAttemptID int64) slog.Attr { return slog.Int64(LogTaskKey, taskAttemptID) }
