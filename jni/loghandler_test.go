package jni

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// recordingSink is a logSink that keeps every record it is given.
type recordingSink struct {
	mu   sync.Mutex
	recs []javaRecord
	err  error // returned by every call when set
}

func (s *recordingSink) log(jr javaRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, jr)
	return s.err
}

func (s *recordingSink) records() []javaRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]javaRecord(nil), s.recs...)
}

// byLogger returns the records of one logger.
func (s *recordingSink) byLogger(name string) []javaRecord {
	var out []javaRecord
	for _, r := range s.records() {
		if r.logger == name {
			out = append(out, r)
		}
	}
	return out
}

// newConfiguredRouter returns a router configured with levels, whose sink
// records.
func newConfiguredRouter(t testing.TB, levels string) (*logRouter, *recordingSink) {
	t.Helper()
	sink := &recordingSink{}
	r := newLogRouter(sink.log)
	require.NoError(t, r.configure(levels))
	return r, sink
}

func TestLoggerForFunctionMapsGoPackagesToSLF4JLoggers(t *testing.T) {
	for _, tc := range []struct{ fn, want string }{
		{"github.com/nativepool/nativepool/pool.(*Reservation).TryGrow", "org.nativepool.pool"},
		{"github.com/nativepool/nativepool/pool.(*unified).reclaim.func1", "org.nativepool.pool"},
		{"github.com/nativepool/nativepool/taskshared.(*Handle).Close", "org.nativepool.taskshared"},
		{"github.com/nativepool/nativepool/ffi.(*Allocator).Close", "org.nativepool.ffi"},
		{"github.com/nativepool/nativepool/ffi/internal/ctest.Run", "org.nativepool.ffi"},
		{"github.com/nativepool/nativepool/internal/bridge.(*Bridge).newTaskPool.func1", "org.nativepool.bridge"},
		{"github.com/nativepool/nativepool/internal/gomem.Read", "org.nativepool.gomem"},
		{"github.com/nativepool/nativepool/jni.finishCall", "org.nativepool.jni"},
		{"github.com/nativepool/nativepool/examples/sort.(*Sorter).Spill", "org.nativepool.engine.sort"},
		{"github.com/nativepool/nativepool/examples/spark/native.x", "org.nativepool.engine.spark"},
		{"main.(*engine).spill", "org.nativepool.engine"},
		{"github.com/acme/query-engine/exec.(*HashJoin).Spill", "org.nativepool.engine.exec"},
		{"github.com/acme/go-engine.run", "org.nativepool.engine.go_engine"},
		{"", "org.nativepool"},
	} {
		assert.Equal(t, tc.want, loggerForFunction(tc.fn), tc.fn)
	}
}

// TestJavaLoggerListMatchesGoLoggerNames pins the other copy of the
// logger names, NativeLog.GO_LOGGERS: every name Java is asked a level for
// is one Go logs on (or a parent of engines'), and every module package
// that logs has its name there.
func TestJavaLoggerListMatchesGoLoggerNames(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "spark", "src", "main", "java", "org", "nativepool", "spark", "NativeLog.java"))
	require.NoError(t, err)
	text := string(src)
	for _, name := range []string{"pool", "taskshared", "ffi", "bridge", "jni", "engine"} {
		assert.Contains(t, text, `ROOT + ".`+name+`"`, "NativeLog.GO_LOGGERS lacks org.nativepool.%s", name)
	}
	assert.Contains(t, text, `ROOT = "`+rootLogger+`"`)
	assert.Equal(t, rootLogger+".engine", engineLogger)
}

func TestRecordsOfEachGoPackageArriveOnTheirOwnLogger(t *testing.T) {
	r, sink := newConfiguredRouter(t, "org.nativepool=DEBUG")
	logger := slog.New(r.handler())

	// pool: the Logging decorator's records are made in package pool.
	p := pool.NewLogging(pool.NewGreedy(1<<20), logger)
	res := pool.NewConsumer("sorter").Register(p)
	res.Grow(100)
	res.Close()
	// taskshared: a handle closed twice is a debug record of the registry.
	reg := taskshared.NewRegistry(taskshared.WithLogger(logger))
	h, err := reg.Acquire(7, func() (pool.Pool, error) { return pool.NewUnbounded(), nil })
	require.NoError(t, err)
	h.Close()
	h.Close()
	// jni: this test's own package.
	logger.Info("from the test")

	assert.NotEmpty(t, sink.byLogger("org.nativepool.pool"), "%+v", sink.records())
	assert.Contains(t, sink.byLogger("org.nativepool.pool")[0].text, "consumer=sorter")
	tsk := sink.byLogger("org.nativepool.taskshared")
	require.Len(t, tsk, 1, "%+v", sink.records())
	assert.Equal(t, int64(7), tsk[0].task, "taskshared's task attribute is the record's task")
	assert.Equal(t, slf4jDebug, tsk[0].level)
	jni := sink.byLogger("org.nativepool.jni")
	require.Len(t, jni, 1)
	assert.Equal(t, javaRecord{level: slf4jInfo, logger: "org.nativepool.jni", task: -1, text: "from the test"}, jni[0])
}

// TestTaskPoolRecordsCarryTheTaskOnAnyGoroutine: a task pool's threshold
// warning, made by the bridge on a goroutine that is no task's thread,
// names its task (the bridge's task attribute).
func TestTaskPoolRecordsCarryTheTaskOnAnyGoroutine(t *testing.T) {
	r, sink := newConfiguredRouter(t, "org.nativepool=INFO")
	b := bridge.NewBridge(slog.New(r.handler()), bridge.ArrowRuntime{})
	require.NoError(t, b.Configure(bridge.Settings{Thresholds: []int64{1 << 20}}))
	ph := mustOpen(t, b, 4242, bridge.KindGreedyUnified, 0, 0, newFakeUpstream(1<<30))
	rh := mustReserve(t, b, ph, "op", false, nil)
	done := make(chan error)
	go func() { done <- b.Grow(rh, 2<<20) }()
	require.NoError(t, <-done)
	require.NoError(t, b.CloseReservation(rh))
	require.NoError(t, b.ClosePool(ph))

	recs := sink.byLogger("org.nativepool.bridge")
	require.NotEmpty(t, recs, "%+v", sink.records())
	assert.Equal(t, int64(4242), recs[0].task)
	assert.Equal(t, slf4jWarn, recs[0].level)
	assert.True(t, strings.HasPrefix(recs[0].text, "nativepool: task pool reserved bytes rose to a threshold pool="), recs[0].text)
	assert.NotContains(t, recs[0].text, "task=", "the task is a field, not an attribute")
}

func TestADisabledRecordNeverReachesTheSink(t *testing.T) {
	r, sink := newConfiguredRouter(t, "org.nativepool=WARN, org.nativepool.pool=INFO, org.nativepool.jni=ERROR")
	logger := slog.New(r.handler())
	ctx := context.Background()

	assert.False(t, logger.Enabled(ctx, slog.LevelDebug), "below every logger's level: Enabled says no")
	assert.True(t, logger.Enabled(ctx, slog.LevelInfo), "pool takes INFO: Enabled passes INFO")
	logger.Debug("debug")
	logger.Info("info, but jni is at ERROR")
	logger.Warn("warn, but jni is at ERROR")
	assert.Empty(t, sink.records(), "disabled records are dropped in Go")

	p := pool.NewLogging(pool.NewGreedy(1<<20), logger)
	res := pool.NewConsumer("c").Register(p)
	res.Grow(1)
	res.Close()
	assert.NotEmpty(t, sink.byLogger("org.nativepool.pool"), "pool's INFO records pass")

	logger.Error("error")
	require.Len(t, sink.byLogger("org.nativepool.jni"), 1)
	assert.Equal(t, slf4jError, sink.byLogger("org.nativepool.jni")[0].level)
}

func TestAnUnlistedLoggerTakesItsClosestListedAncestorsLevel(t *testing.T) {
	lv, err := parseLogLevels("org.nativepool=ERROR,org.nativepool.engine=DEBUG,org.nativepool.pool=OFF")
	require.NoError(t, err)
	assert.Equal(t, slog.LevelDebug, lv.threshold("org.nativepool.engine.sort"))
	assert.Equal(t, slog.LevelError, lv.threshold("org.nativepool.gomem"))
	assert.Equal(t, slog.LevelError, lv.threshold("org.nativepool"))
	assert.Greater(t, lv.threshold("org.nativepool.pool"), slog.Level(1<<30), "OFF lets nothing through")
	assert.Equal(t, slog.LevelDebug, lv.min)
}

func TestLevelsMapToSLF4JAndBack(t *testing.T) {
	for _, tc := range []struct {
		l    slog.Level
		code int32
	}{
		{slog.LevelDebug - 4, slf4jTrace}, {slog.LevelDebug - 1, slf4jTrace},
		{slog.LevelDebug, slf4jDebug}, {slog.LevelInfo - 1, slf4jDebug},
		{slog.LevelInfo, slf4jInfo}, {slog.LevelWarn - 1, slf4jInfo},
		{slog.LevelWarn, slf4jWarn}, {slog.LevelError, slf4jError}, {slog.LevelError + 4, slf4jError},
	} {
		assert.Equal(t, tc.code, slf4jCode(tc.l), "%v", tc.l)
		assert.GreaterOrEqual(t, tc.l, slogThreshold(tc.code), "a %v record passes a logger at %s", tc.l, slf4jLevelNames[tc.code])
		if tc.code < slf4jError {
			assert.Less(t, tc.l, slogThreshold(tc.code+1), "a %v record is stopped by a logger at %s", tc.l, slf4jLevelNames[tc.code+1])
		}
	}
}

func TestConfigureRejectsMalformedLevels(t *testing.T) {
	for _, s := range []string{"", "org.nativepool.pool=INFO", "org.nativepool=LOUD", "org.nativepool", "=INFO,org.nativepool=INFO"} {
		r := newLogRouter((&recordingSink{}).log)
		err := r.configure(s)
		assert.ErrorIs(t, err, bridge.ErrInvalidArgument, "%q", s)
		assert.Nil(t, r.levels.Load(), "%q: nothing changes", s)
	}
}

func TestRecordTextHasTheAttributesAsKeyValue(t *testing.T) {
	r, sink := newConfiguredRouter(t, "org.nativepool=TRACE")
	logger := slog.New(r.handler()).With("pool", "task 5", slog.Int64("chunk", 8<<20)).WithGroup("g")
	logger.Warn("refused", "bytes", 1024, "error", errors.New("Failed to allocate"), slog.Group("sub", "a", 1), "empty", "", slog.Group("none"))
	recs := sink.records()
	require.Len(t, recs, 1)
	assert.Equal(t, `refused pool="task 5" chunk=8388608 g.bytes=1024 g.error="Failed to allocate" g.sub.a=1 g.empty=""`, recs[0].text)
	assert.Equal(t, int64(-1), recs[0].task)
	assert.Equal(t, "org.nativepool.jni", recs[0].logger)
}

func TestTaskAttributeBecomesTheRecordsTaskOnlyAtTopLevel(t *testing.T) {
	r, sink := newConfiguredRouter(t, "org.nativepool=INFO")
	base := slog.New(r.handler())

	base.With(TaskAttr(12)).Info("from a task logger", "k", "v")
	base.Info("from a record", "task", int64(13))
	base.Info("a task name is no task id", "task", "sorter")
	base.WithGroup("arbiter").Info("grouped", "task", 14)
	base.With(TaskAttr(15)).Info("the logger's task wins", "task", 16)

	recs := sink.records()
	require.Len(t, recs, 5)
	assert.Equal(t, javaRecord{slf4jInfo, "org.nativepool.jni", 12, "from a task logger k=v"}, recs[0])
	assert.Equal(t, javaRecord{slf4jInfo, "org.nativepool.jni", 13, "from a record"}, recs[1])
	assert.Equal(t, javaRecord{slf4jInfo, "org.nativepool.jni", -1, "a task name is no task id task=sorter"}, recs[2])
	assert.Equal(t, javaRecord{slf4jInfo, "org.nativepool.jni", -1, "grouped arbiter.task=14"}, recs[3])
	assert.Equal(t, javaRecord{slf4jInfo, "org.nativepool.jni", 15, "the logger's task wins task=16"}, recs[4])
}

// TestUnconfiguredRouterWritesToSlogsDefaultHandler: before configureLog0
// every record goes to slog.Default() as it did without the router, with
// the logger's attributes and groups, and the sink is never called.
func TestUnconfiguredRouterWritesToSlogsDefaultHandler(t *testing.T) {
	var buf bytes.Buffer
	restore := setSlogDefault(t, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level:       slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
	})))
	defer restore()
	sink := &recordingSink{}
	r := newLogRouter(sink.log)
	logger := slog.New(r.handler()).With(TaskAttr(3)).WithGroup("g")

	assert.False(t, logger.Enabled(context.Background(), slog.LevelDebug), "the default handler's level applies")
	logger.Debug("hidden")
	logger.Info("shown", "k", 1)

	assert.Empty(t, sink.records())
	assert.Equal(t, "level=INFO msg=shown task=3 g.k=1\n", buf.String())
}

// setSlogDefault makes l slog's default for one test and returns what puts
// slog's and the log package's defaults back (slog.SetDefault redirects the
// log package, and putting slog's own default back does not undo that).
func setSlogDefault(t *testing.T, l *slog.Logger) func() {
	t.Helper()
	prev := slog.Default()
	flags, w := log.Flags(), log.Writer()
	slog.SetDefault(l)
	return func() {
		slog.SetDefault(prev)
		log.SetOutput(w)
		log.SetFlags(flags)
	}
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func TestARecordJavaDidNotTakeIsWrittenToStderr(t *testing.T) {
	sink := &recordingSink{err: errors.New("NativeLog.log raised an exception (cleared)")}
	r := newLogRouter(sink.log)
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	defer f.Close()
	r.stderr = f
	require.NoError(t, r.configure("org.nativepool=INFO"))

	slog.New(r.handler()).With(TaskAttr(9)).Warn("late release", "bytes", 10)
	require.NoError(t, f.Sync())
	out, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	assert.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3} WARN org\.nativepool\.jni: \[task 9\] late release bytes=10 \(not logged through SLF4J: NativeLog\.log raised an exception \(cleared\)\)\n$`, string(out))
	assert.Equal(t, int64(1), r.sinkFailures.Load())
}

// TestRouterIsSafeForConcurrentRecordsAndReconfiguration runs under -race:
// records from many goroutines while the levels change.
func TestRouterIsSafeForConcurrentRecordsAndReconfiguration(t *testing.T) {
	r, sink := newConfiguredRouter(t, "org.nativepool=INFO")
	logger := slog.New(r.handler())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := logger.With(TaskAttr(int64(g)))
			for i := range 200 {
				l.Info("record", "i", i)
			}
		}()
	}
	for range 50 {
		require.NoError(t, r.configure("org.nativepool=INFO,org.nativepool.pool=WARN"))
	}
	wg.Wait()
	assert.Len(t, sink.records(), 8*200)
}

// BenchmarkDisabledRecord is what a record below every logger's level
// costs the Go caller once Java logging is configured (no upcall), next to
// slog's own text handler at the same level and a record dropped by its
// logger's level in Handle (it passed Enabled's minimum: one PC lookup).
func BenchmarkDisabledRecord(b *testing.B) {
	r, sink := newConfiguredRouter(b, "org.nativepool=WARN,org.nativepool.pool=INFO")
	b.Run("router/below-every-level", func(b *testing.B) {
		logger := slog.New(r.handler()).With(TaskAttr(1))
		b.ReportAllocs()
		for range b.N {
			logger.Debug("spill request found nothing", "freed", 0)
		}
	})
	b.Run("slog-text-handler/below-level", func(b *testing.B) {
		logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})).With(TaskAttr(1))
		b.ReportAllocs()
		for range b.N {
			logger.Debug("spill request found nothing", "freed", 0)
		}
	})
	b.Run("router/below-its-loggers-level", func(b *testing.B) {
		logger := slog.New(r.handler()).With(TaskAttr(1))
		b.ReportAllocs()
		for range b.N {
			logger.Info("spill request found nothing", "freed", 0) // jni is at WARN, pool at INFO
		}
	})
	if n := len(sink.records()); n != 0 {
		b.Fatalf("%d disabled records reached the sink", n)
	}
}

// TestConfigureRefusesABadLevelsStringAndKeepsTheLevelsItHad: bad input to
// configureLog0 is an ErrInvalidArgument naming the part, and nothing
// changes (the router keeps the levels of the last good call).
func TestConfigureRefusesABadLevelsStringAndKeepsTheLevelsItHad(t *testing.T) {
	r := newLogRouter(nil)
	require.NoError(t, r.configure("org.nativepool=WARN"))
	before := r.levels.Load()
	for _, bad := range []string{"org.nativepool=LOUD", "org.nativepool", "=INFO", "org.nativepool.pool=INFO"} {
		err := r.configure(bad)
		require.ErrorIs(t, err, bridge.ErrInvalidArgument, bad)
		assert.Same(t, before, r.levels.Load(), "levels unchanged after %q", bad)
	}
}
