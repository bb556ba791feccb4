package jni

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nativepool/nativepool/internal/bridge"
)

// Go's slog records through SLF4J (issue 12): the process's log router
// hands every enabled record to org.nativepool.spark.NativeLog over one JNI
// upcall (log.go, np_log.c), which logs it on an SLF4J logger named after
// the Go package that made it. This file is the part that needs no JVM: the
// handler, the logger names, the levels and the text of a record; tests
// drive it with a fake sink.
//
// Before NativeBridge.configureLog0 (a Go-only process, tests, the Go
// example, the JVM before the plugin starts) the router adds nothing: each
// record goes to slog.Default()'s handler as it did before this existed.

// The SLF4J level codes that cross the boundary, in both directions: the
// level of a record (NativeLog.log's first argument) and the levels in
// configureLog0's string (by name). The other copy is NativeLog.java
// (TRACE … OFF); change both together.
const (
	slf4jTrace int32 = iota
	slf4jDebug
	slf4jInfo
	slf4jWarn
	slf4jError
	slf4jOff
)

// slf4jLevelNames are the names configureLog0 uses, indexed by code.
var slf4jLevelNames = [...]string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"}

// The SLF4J logger names of Go records (see loggerForFunction). rootLogger
// is also the logger of a record without a PC (the log package's output
// once the router is slog's default), and the level of any name Java did
// not report.
const (
	rootLogger   = "org.nativepool"
	engineLogger = "org.nativepool.engine"
	modulePath   = "github.com/nativepool/nativepool/"
)

// slf4jCode is the SLF4J level a slog level is logged at: below Debug is
// TRACE, [Debug, Info) DEBUG, [Info, Warn) INFO, [Warn, Error) WARN, from
// Error up ERROR.
func slf4jCode(l slog.Level) int32 {
	switch {
	case l >= slog.LevelError:
		return slf4jError
	case l >= slog.LevelWarn:
		return slf4jWarn
	case l >= slog.LevelInfo:
		return slf4jInfo
	case l >= slog.LevelDebug:
		return slf4jDebug
	default:
		return slf4jTrace
	}
}

// slogThreshold is the lowest slog level an SLF4J logger whose effective
// level is code lets through (slf4jCode's inverse on lower bounds).
func slogThreshold(code int32) slog.Level {
	switch code {
	case slf4jTrace:
		return slog.Level(math.MinInt)
	case slf4jDebug:
		return slog.LevelDebug
	case slf4jInfo:
		return slog.LevelInfo
	case slf4jWarn:
		return slog.LevelWarn
	case slf4jError:
		return slog.LevelError
	default:
		return slog.Level(math.MaxInt)
	}
}

// loggerForFunction maps a function's full name (runtime.Frame.Function)
// to the SLF4J logger of the records it makes: the module's packages to
// org.nativepool.<first path element> (pool, taskshared, ffi, jni, bench;
// their sub-packages included), internal/<x> to org.nativepool.<x>
// (internal/bridge: org.nativepool.bridge), examples/<x> to
// org.nativepool.engine.<x>, a main package (an engine's own c-shared
// library) to org.nativepool.engine, and any other package (an engine's) to
// org.nativepool.engine.<last path element>. An empty name gives
// org.nativepool.
func loggerForFunction(fn string) string {
	if fn == "" {
		return rootLogger
	}
	pkg := packageOf(fn)
	if pkg == "main" {
		return engineLogger
	}
	if rel, ok := strings.CutPrefix(pkg, modulePath); ok {
		first, rest, _ := strings.Cut(rel, "/")
		second, _, _ := strings.Cut(rest, "/")
		switch {
		case first == "internal" && second != "":
			return rootLogger + "." + loggerPart(second)
		case first == "examples" && second != "":
			return engineLogger + "." + loggerPart(second)
		default:
			return rootLogger + "." + loggerPart(first)
		}
	}
	return engineLogger + "." + loggerPart(pkg[strings.LastIndexByte(pkg, '/')+1:])
}

// packageOf is the import path of the package of a function name such as
// "github.com/x/y/pool.(*Reservation).Grow.func1" or "main.run".
func packageOf(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if dot := strings.IndexByte(fn[slash+1:], '.'); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// loggerPart keeps a logger name element to letters, digits and '_' (a
// package path element may hold '-' or '.'; a dot would add a level).
func loggerPart(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, s)
}

// logLevels are the effective SLF4J levels Java reported in configureLog0,
// as slog thresholds. Immutable once built.
type logLevels struct {
	// min is the lowest threshold of any logger: Enabled's whole test.
	min slog.Level
	// byName holds every logger Java reported; a name not in it takes its
	// closest reported ancestor's (rootLogger's at worst).
	byName map[string]slog.Level
}

// parseLogLevels reads configureLog0's string: comma-separated
// name=LEVEL pairs (LEVEL one of TRACE, DEBUG, INFO, WARN, ERROR, OFF),
// which must include org.nativepool. An error wraps
// bridge.ErrInvalidArgument.
func parseLogLevels(s string) (*logLevels, error) {
	lv := &logLevels{min: slog.Level(math.MaxInt), byName: make(map[string]slog.Level)}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, level, ok := strings.Cut(part, "=")
		code := -1
		for i, n := range slf4jLevelNames {
			if strings.EqualFold(strings.TrimSpace(level), n) {
				code = i
			}
		}
		name = strings.TrimSpace(name)
		if !ok || name == "" || code < 0 {
			return nil, fmt.Errorf("nativepool: configureLog0: %q is not logger=LEVEL (LEVEL: TRACE, DEBUG, INFO, WARN, ERROR or OFF): %w", part, bridge.ErrInvalidArgument)
		}
		t := slogThreshold(int32(code))
		lv.byName[name] = t
		lv.min = min(lv.min, t)
	}
	if _, ok := lv.byName[rootLogger]; !ok {
		return nil, fmt.Errorf("nativepool: configureLog0: %q names no level for %s: %w", s, rootLogger, bridge.ErrInvalidArgument)
	}
	return lv, nil
}

// threshold is the lowest slog level logger lets through.
func (lv *logLevels) threshold(logger string) slog.Level {
	for name := logger; ; {
		if t, ok := lv.byName[name]; ok {
			return t
		}
		dot := strings.LastIndexByte(name, '.')
		if dot < 0 {
			return lv.byName[rootLogger]
		}
		name = name[:dot]
	}
}

// javaRecord is one record as NativeLog.log receives it.
type javaRecord struct {
	level  int32  // an slf4j* code, never slf4jOff
	logger string // the SLF4J logger name
	task   int64  // the task attempt id, or -1 if Go does not know it
	text   string // the message, then " key=value" per attribute
}

// logSink delivers a record to Java; an error means it did not arrive (the
// router then writes it to stderr).
type logSink func(javaRecord) error

// logRouter is the process's switch between slog's default handler and
// Java: see the file comment. One lives in the process registry
// (process.go, processLog); tests make their own with newLogRouter. Safe for
// concurrent use; the zero value is not valid.
type logRouter struct {
	sink logSink
	// levels is nil until configure; then every record is Java's (or
	// stderr's, when the sink fails).
	levels atomic.Pointer[logLevels]
	// installed is set once the router has become slog's default.
	installed atomic.Bool
	// loggers caches loggerForFunction by record PC (uintptr → string):
	// a log call site's package never changes, and the set of call sites is
	// bounded by the code.
	loggers sync.Map
	// stderr receives the records the sink failed to deliver, one line each.
	stderr *os.File
	// sinkFailures counts records written to stderr because the sink failed.
	sinkFailures atomic.Int64
}

// newLogRouter returns an unconfigured router that will hand records to
// sink once configured.
func newLogRouter(sink logSink) *logRouter {
	return &logRouter{sink: sink, stderr: os.Stderr}
}

// configure makes Java the destination of every record, with the levels of
// configureLog0's string (parseLogLevels). On error nothing changes.
func (r *logRouter) configure(levels string) error {
	lv, err := parseLogLevels(levels)
	if err != nil {
		return err
	}
	r.levels.Store(lv)
	return nil
}

// installDefault makes the router slog's default handler, once per process:
// records of loggers taken from slog.Default() (engines', ffi's defaults),
// and the log package's output (which slog.SetDefault redirects), reach
// Java too. It is never undone: the handler slog had before would, once
// slog.SetDefault has redirected the log package, write back into the
// router.
func (r *logRouter) installDefault() {
	if r.installed.CompareAndSwap(false, true) {
		slog.SetDefault(slog.New(r.handler()))
	}
}

// handler is a slog.Handler over the router, with no attributes.
func (r *logRouter) handler() *logHandler {
	return &logHandler{r: r, task: -1}
}

// loggerName is the SLF4J logger of a record made at pc (cached).
func (r *logRouter) loggerName(pc uintptr) string {
	if pc == 0 {
		return rootLogger
	}
	if v, ok := r.loggers.Load(pc); ok {
		return v.(string)
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	name := loggerForFunction(f.Function)
	r.loggers.Store(pc, name)
	return name
}

// logHandler is the slog.Handler of a logRouter, with the attributes and
// groups of WithAttrs and WithGroup. Safe for concurrent use; immutable.
type logHandler struct {
	r *logRouter
	// text holds the attributes of WithAttrs, formatted (" k=v" each).
	text string
	// group is the qualifier of attribute keys ("a.b."), from WithGroup.
	group string
	// task is the task attempt of a top-level "task" attribute of
	// WithAttrs (bridge.LogTaskKey), or -1.
	task int64
	// ops replays WithAttrs and WithGroup on slog's default handler for
	// the records that go there (before configure).
	ops []func(slog.Handler) slog.Handler
}

// fallback is slog's default handler with this handler's attributes and
// groups, or a stderr text handler if the router is slog's default (a
// configured router never gets here).
func (h *logHandler) fallback() slog.Handler {
	d := slog.Default().Handler()
	if _, ours := d.(*logHandler); ours {
		d = slog.NewTextHandler(h.r.stderr, nil)
	}
	for _, op := range h.ops {
		d = op(d)
	}
	return d
}

// Enabled implements slog.Handler. Configured, it is one atomic load and a
// comparison with the lowest level of any nativepool logger: no upcall. A
// record of a logger whose own level is higher is dropped by Handle, also
// without an upcall.
func (h *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	lv := h.r.levels.Load()
	if lv == nil {
		// Without this handler's attributes: a handler's level does not
		// depend on them (slog's own never do), and replaying them would
		// allocate on every call.
		d := slog.Default().Handler()
		if _, ours := d.(*logHandler); ours {
			return level >= slog.LevelInfo // fallback's stderr text handler
		}
		return d.Enabled(ctx, level)
	}
	return level >= lv.min
}

// Handle implements slog.Handler: it drops a record below its logger's
// level, and hands the others to Java (or, if that fails, to stderr). It
// never returns an error once configured: a record Java did not take has
// been written to stderr.
func (h *logHandler) Handle(ctx context.Context, rec slog.Record) error {
	lv := h.r.levels.Load()
	if lv == nil {
		return h.fallback().Handle(ctx, rec)
	}
	logger := h.r.loggerName(rec.PC)
	if rec.Level < lv.threshold(logger) {
		return nil
	}
	jr := javaRecord{level: slf4jCode(rec.Level), logger: logger, task: h.task}
	var b strings.Builder
	b.WriteString(rec.Message)
	b.WriteString(h.text)
	rec.Attrs(func(a slog.Attr) bool {
		if h.group == "" && jr.task < 0 {
			if id, ok := taskOf(a); ok {
				jr.task = id
				return true
			}
		}
		appendAttr(&b, h.group, a)
		return true
	})
	jr.text = b.String()
	if err := h.r.sink(jr); err != nil {
		h.r.sinkFailures.Add(1)
		h.r.writeStderr(rec.Time, jr, err)
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	c := *h
	var b strings.Builder
	b.WriteString(h.text)
	for _, a := range attrs {
		if h.group == "" && c.task < 0 {
			if id, ok := taskOf(a); ok {
				c.task = id
				continue
			}
		}
		appendAttr(&b, h.group, a)
	}
	c.text = b.String()
	kept := append([]slog.Attr(nil), attrs...)
	c.ops = append(h.ops[:len(h.ops):len(h.ops)], func(d slog.Handler) slog.Handler { return d.WithAttrs(kept) })
	return &c
}

// WithGroup implements slog.Handler.
func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	c.ops = append(h.ops[:len(h.ops):len(h.ops)], func(d slog.Handler) slog.Handler { return d.WithGroup(name) })
	return &c
}

// taskOf reports whether a is a task attribute (bridge.LogTaskKey with an
// integer value) and its task attempt id.
func taskOf(a slog.Attr) (int64, bool) {
	if a.Key != bridge.LogTaskKey {
		return 0, false
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindInt64:
		return v.Int64(), v.Int64() >= 0
	case slog.KindUint64:
		return int64(v.Uint64()), v.Uint64() <= math.MaxInt64
	}
	return 0, false
}

// appendAttr writes " key=value" for a (group members as group.key=value),
// as slog's text handler would: empty attributes are skipped, values that
// need it are quoted.
func appendAttr(b *strings.Builder, group string, a slog.Attr) {
	v := a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if v.Kind() == slog.KindGroup {
		g := v.Group()
		if len(g) == 0 {
			return
		}
		prefix := group
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, m := range g {
			appendAttr(b, prefix, m)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(group)
	b.WriteString(a.Key)
	b.WriteByte('=')
	var s string
	switch v.Kind() {
	case slog.KindString:
		s = v.String()
	case slog.KindTime:
		s = v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			s = err.Error()
		} else {
			s = v.String()
		}
	default:
		s = v.String()
	}
	if needsQuote(s) {
		s = strconv.Quote(s)
	}
	b.WriteString(s)
}

// needsQuote reports whether a value must be quoted to stay one token.
func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		if r == ' ' || r == '=' || r == '"' || r == utf8.RuneError || !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}

// writeStderr writes a record Java did not take, as one line.
func (r *logRouter) writeStderr(t time.Time, jr javaRecord, err error) {
	if t.IsZero() {
		t = time.Now()
	}
	task := ""
	if jr.task >= 0 {
		task = "[task " + strconv.FormatInt(jr.task, 10) + "] "
	}
	line := fmt.Sprintf("%s %s %s: %s%s (not logged through SLF4J: %v)\n",
		t.Format("15:04:05.000"), slf4jLevelNames[jr.level], jr.logger, task, jr.text, err)
	_, _ = r.stderr.WriteString(line)
}

var _ slog.Handler = (*logHandler)(nil)
