package logsink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/internal/bridge"
	"github.com/nativepool/nativepool/pool"
	"github.com/nativepool/nativepool/taskshared"
)

// recordingSink is a Sink that keeps every record it is given.
type recordingSink struct {
	mu   sync.Mutex
	recs []Record
	err  error // returned by every call when set
}

func (s *recordingSink) log(jr Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, jr)
	return s.err
}

func (s *recordingSink) records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.recs...)
}

// byLogger returns the records of one logger.
func (s *recordingSink) byLogger(name string) []Record {
	var out []Record
	for _, r := range s.records() {
		if r.Logger == name {
			out = append(out, r)
		}
	}
	return out
}

// newConfiguredRouter returns a router configured with levels, whose sink
// records.
func newConfiguredRouter(t testing.TB, levels string) (*Router, *recordingSink) {
	t.Helper()
	sink := &recordingSink{}
	r := NewRouter(sink.log)
	require.NoError(t, r.Configure(levels))
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

// TestLoggerNamesAreTheLoggersOfTheModulesPackages pins the list Java is
// asked levels for (LoggerNames, generated into GoLoggers.NAMES): the root
// first, then for each package of the module that logs the very name its
// records get, and the parent of engines' loggers last.
func TestLoggerNamesAreTheLoggersOfTheModulesPackages(t *testing.T) {
	want := []string{RootLogger}
	for _, fn := range []string{
		"github.com/nativepool/nativepool/pool.(*Reservation).Grow",
		"github.com/nativepool/nativepool/taskshared.(*Registry).Acquire",
		"github.com/nativepool/nativepool/ffi.(*Allocator).Close",
		"github.com/nativepool/nativepool/internal/bridge.(*Bridge).ClosePool",
		"github.com/nativepool/nativepool/jni.finishCall",
		"main.run",
	} {
		want = append(want, loggerForFunction(fn))
	}
	assert.Equal(t, want, LoggerNames())
	assert.Equal(t, RootLogger, loggerForFunction(""))
	assert.Equal(t, RootLogger+".engine", engineLogger)
	for _, name := range LoggerNames()[1:] {
		assert.True(t, strings.HasPrefix(name, RootLogger+"."), "%s is below %s", name, RootLogger)
	}
	assert.Equal(t, []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"}, LevelNames())
	assert.Equal(t, []int32{0, 1, 2, 3, 4, 5}, []int32{LevelTrace, LevelDebug, LevelInfo, LevelWarn, LevelError, LevelOff})
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
	// logsink: this test's own package.
	logger.Info("from the test")

	assert.NotEmpty(t, sink.byLogger("org.nativepool.pool"), "%+v", sink.records())
	assert.Contains(t, sink.byLogger("org.nativepool.pool")[0].Text, "consumer=sorter")
	tsk := sink.byLogger("org.nativepool.taskshared")
	require.Len(t, tsk, 1, "%+v", sink.records())
	assert.Equal(t, int64(7), tsk[0].Task, "taskshared's task attribute is the record's task")
	assert.Equal(t, LevelDebug, tsk[0].Level)
	own := sink.byLogger("org.nativepool.logsink")
	require.Len(t, own, 1)
	assert.Equal(t, Record{Level: LevelInfo, Logger: "org.nativepool.logsink", Task: -1, Text: "from the test"}, own[0])
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
	assert.Equal(t, int64(4242), recs[0].Task)
	assert.Equal(t, LevelWarn, recs[0].Level)
	assert.True(t, strings.HasPrefix(recs[0].Text, "nativepool: task pool reserved bytes rose to a threshold pool="), recs[0].Text)
	assert.NotContains(t, recs[0].Text, "task=", "the task is a field, not an attribute")
}

func TestADisabledRecordNeverReachesTheSink(t *testing.T) {
	r, sink := newConfiguredRouter(t, "org.nativepool=WARN, org.nativepool.pool=INFO, org.nativepool.logsink=ERROR")
	logger := slog.New(r.handler())
	ctx := context.Background()

	assert.False(t, logger.Enabled(ctx, slog.LevelDebug), "below every logger's level: Enabled says no")
	assert.True(t, logger.Enabled(ctx, slog.LevelInfo), "pool takes INFO: Enabled passes INFO")
	logger.Debug("debug")
	logger.Info("info, but logsink is at ERROR")
	logger.Warn("warn, but logsink is at ERROR")
	assert.Empty(t, sink.records(), "disabled records are dropped in Go")

	p := pool.NewLogging(pool.NewGreedy(1<<20), logger)
	res := pool.NewConsumer("c").Register(p)
	res.Grow(1)
	res.Close()
	assert.NotEmpty(t, sink.byLogger("org.nativepool.pool"), "pool's INFO records pass")

	logger.Error("error")
	require.Len(t, sink.byLogger("org.nativepool.logsink"), 1)
	assert.Equal(t, LevelError, sink.byLogger("org.nativepool.logsink")[0].Level)
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
		{slog.LevelDebug - 4, LevelTrace}, {slog.LevelDebug - 1, LevelTrace},
		{slog.LevelDebug, LevelDebug}, {slog.LevelInfo - 1, LevelDebug},
		{slog.LevelInfo, LevelInfo}, {slog.LevelWarn - 1, LevelInfo},
		{slog.LevelWarn, LevelWarn}, {slog.LevelError, LevelError}, {slog.LevelError + 4, LevelError},
	} {
		assert.Equal(t, tc.code, slf4jCode(tc.l), "%v", tc.l)
		assert.GreaterOrEqual(t, tc.l, slogThreshold(tc.code), "a %v record passes a logger at %s", tc.l, levelNames[tc.code])
		if tc.code < LevelError {
			assert.Less(t, tc.l, slogThreshold(tc.code+1), "a %v record is stopped by a logger at %s", tc.l, levelNames[tc.code+1])
		}
	}
}

func TestConfigureRejectsMalformedLevels(t *testing.T) {
	for _, s := range []string{"", "org.nativepool.pool=INFO", "org.nativepool=LOUD", "org.nativepool", "=INFO,org.nativepool=INFO"} {
		r := NewRouter((&recordingSink{}).log)
		err := r.Configure(s)
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
	assert.Equal(t, `refused pool="task 5" chunk=8388608 g.bytes=1024 g.error="Failed to allocate" g.sub.a=1 g.empty=""`, recs[0].Text)
	assert.Equal(t, int64(-1), recs[0].Task)
	assert.Equal(t, "org.nativepool.logsink", recs[0].Logger)
}

func TestTaskAttributeBecomesTheRecordsTaskOnlyAtTopLevel(t *testing.T) {
	r, sink := newConfiguredRouter(t, "org.nativepool=INFO")
	base := slog.New(r.handler())

	base.With(bridge.LogTask(12)).Info("from a task logger", "k", "v")
	base.Info("from a record", "task", int64(13))
	base.Info("a task name is no task id", "task", "sorter")
	base.WithGroup("arbiter").Info("grouped", "task", 14)
	base.With(bridge.LogTask(15)).Info("the logger's task wins", "task", 16)

	recs := sink.records()
	require.Len(t, recs, 5)
	assert.Equal(t, Record{LevelInfo, "org.nativepool.logsink", 12, "from a task logger k=v"}, recs[0])
	assert.Equal(t, Record{LevelInfo, "org.nativepool.logsink", 13, "from a record"}, recs[1])
	assert.Equal(t, Record{LevelInfo, "org.nativepool.logsink", -1, "a task name is no task id task=sorter"}, recs[2])
	assert.Equal(t, Record{LevelInfo, "org.nativepool.logsink", -1, "grouped arbiter.task=14"}, recs[3])
	assert.Equal(t, Record{LevelInfo, "org.nativepool.logsink", 15, "the logger's task wins task=16"}, recs[4])
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
	r := NewRouter(sink.log)
	logger := slog.New(r.handler()).With(bridge.LogTask(3)).WithGroup("g")

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
	sink := &recordingSink{err: errors.New("GoLog.log raised an exception (cleared)")}
	r := NewRouter(sink.log)
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	defer f.Close()
	r.stderr = f
	require.NoError(t, r.Configure("org.nativepool=INFO"))

	slog.New(r.handler()).With(bridge.LogTask(9)).Warn("late release", "bytes", 10)
	require.NoError(t, f.Sync())
	out, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	assert.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3} WARN org\.nativepool\.logsink: \[task 9\] late release bytes=10 \(not logged through SLF4J: GoLog\.log raised an exception \(cleared\)\)\n$`, string(out))
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
			l := logger.With(bridge.LogTask(int64(g)))
			for i := range 200 {
				l.Info("record", "i", i)
			}
		}()
	}
	for range 50 {
		require.NoError(t, r.Configure("org.nativepool=INFO,org.nativepool.pool=WARN"))
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
		logger := slog.New(r.handler()).With(bridge.LogTask(1))
		b.ReportAllocs()
		for range b.N {
			logger.Debug("spill request found nothing", "freed", 0)
		}
	})
	b.Run("slog-text-handler/below-level", func(b *testing.B) {
		logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})).With(bridge.LogTask(1))
		b.ReportAllocs()
		for range b.N {
			logger.Debug("spill request found nothing", "freed", 0)
		}
	})
	b.Run("router/below-its-loggers-level", func(b *testing.B) {
		logger := slog.New(r.handler()).With(bridge.LogTask(1))
		b.ReportAllocs()
		for range b.N {
			logger.Info("spill request found nothing", "freed", 0) // logsink is at WARN, pool at INFO
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
	r := NewRouter(nil)
	require.NoError(t, r.Configure("org.nativepool=WARN"))
	before := r.levels.Load()
	for _, bad := range []string{"org.nativepool=LOUD", "org.nativepool", "=INFO", "org.nativepool.pool=INFO"} {
		err := r.Configure(bad)
		require.ErrorIs(t, err, bridge.ErrInvalidArgument, bad)
		assert.Same(t, before, r.levels.Load(), "levels unchanged after %q", bad)
	}
}
