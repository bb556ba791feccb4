package logsink

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

// Record is one record as the Java log sink receives it.
type Record struct {
	Level  int32  // a Level* code, never LevelOff
	Logger string // the SLF4J logger name
	Task   int64  // the task attempt id, or -1 if Go does not know it
	Text   string // the message, then " key=value" per attribute
}

// Sink delivers a record to Java; an error means it did not arrive (the
// router then writes it to stderr). jni's sink is one JNI upcall.
type Sink func(Record) error

// Router is the process's switch between slog's default handler and Java
// (see the package documentation). jni keeps the process's one; tests make
// their own with NewRouter. Safe for concurrent use; the zero value is not
// valid.
type Router struct {
	sink Sink
	// levels is nil until Configure; then every record is Java's (or
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

// NewRouter returns an unconfigured router that will hand records to
// sink once configured.
func NewRouter(sink Sink) *Router {
	return &Router{sink: sink, stderr: os.Stderr}
}

// Configure makes Java the destination of every record, with the levels of
// configureLog0's string (parseLogLevels). On error nothing changes.
func (r *Router) Configure(levels string) error {
	lv, err := parseLogLevels(levels)
	if err != nil {
		return err
	}
	r.levels.Store(lv)
	return nil
}

// InstallDefault makes the router slog's default handler, once per process:
// records of loggers taken from slog.Default() (engines', ffi's defaults),
// and the log package's output (which slog.SetDefault redirects), reach
// Java too. It is never undone: the handler slog had before would, once
// slog.SetDefault has redirected the log package, write back into the
// router.
func (r *Router) InstallDefault() {
	if r.installed.CompareAndSwap(false, true) {
		slog.SetDefault(slog.New(r.handler()))
	}
}

// Handler returns a slog.Handler over the router, with no attributes.
func (r *Router) Handler() slog.Handler { return r.handler() }

// handler is Handler as its concrete type.
func (r *Router) handler() *logHandler {
	return &logHandler{r: r, task: -1}
}

// loggerName is the SLF4J logger of a record made at pc (cached).
func (r *Router) loggerName(pc uintptr) string {
	if pc == 0 {
		return RootLogger
	}
	if v, ok := r.loggers.Load(pc); ok {
		return v.(string)
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	name := loggerForFunction(f.Function)
	r.loggers.Store(pc, name)
	return name
}

// logHandler is the slog.Handler of a Router, with the attributes and
// groups of WithAttrs and WithGroup. Safe for concurrent use; immutable.
type logHandler struct {
	r *Router
	// text holds the attributes of WithAttrs, formatted (" k=v" each).
	text string
	// group is the qualifier of attribute keys ("a.b."), from WithGroup.
	group string
	// task is the task attempt of a top-level "task" attribute of
	// WithAttrs (bridge.LogTaskKey), or -1.
	task int64
	// ops replays WithAttrs and WithGroup on slog's default handler for
	// the records that go there (before Configure).
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
	jr := Record{Level: slf4jCode(rec.Level), Logger: logger, Task: h.task}
	var b strings.Builder
	b.WriteString(rec.Message)
	b.WriteString(h.text)
	rec.Attrs(func(a slog.Attr) bool {
		if h.group == "" && jr.Task < 0 {
			if id, ok := taskOf(a); ok {
				jr.Task = id
				return true
			}
		}
		appendAttr(&b, h.group, a)
		return true
	})
	jr.Text = b.String()
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
func (r *Router) writeStderr(t time.Time, jr Record, err error) {
	if t.IsZero() {
		t = time.Now()
	}
	task := ""
	if jr.Task >= 0 {
		task = "[task " + strconv.FormatInt(jr.Task, 10) + "] "
	}
	line := fmt.Sprintf("%s %s %s: %s%s (not logged through SLF4J: %v)\n",
		t.Format("15:04:05.000"), levelNames[jr.Level], jr.Logger, task, jr.Text, err)
	_, _ = r.stderr.WriteString(line)
}

var _ slog.Handler = (*logHandler)(nil)
