package logsink

import (
	"fmt"
	"log/slog"
	"math"
	"strings"

	"github.com/nativepool/nativepool/internal/bridge"
)

// The SLF4J level codes that cross the boundary, in both directions: the
// level of a record (the first argument of the Java log sink's
// log(ILjava/lang/String;JLjava/lang/String;)V) and the levels of
// configureLog0's string (by name, levelNames). The Java copy,
// org.nativepool.spark.jni.GoLoggers (TRACE … OFF, LEVEL_NAMES), is
// generated from these (internal/javaconsts).
const (
	LevelTrace int32 = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
	LevelOff // a logger's level only: no record is logged at OFF
)

// levelNames are the names configureLog0 uses, indexed by code.
var levelNames = [...]string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"}

// LevelNames returns the level names indexed by code: "TRACE" (LevelTrace)
// … "OFF" (LevelOff).
func LevelNames() []string { return levelNames[:] }

// slf4jCode is the SLF4J level a slog level is logged at: below Debug is
// TRACE, [Debug, Info) DEBUG, [Info, Warn) INFO, [Warn, Error) WARN, from
// Error up ERROR.
func slf4jCode(l slog.Level) int32 {
	switch {
	case l >= slog.LevelError:
		return LevelError
	case l >= slog.LevelWarn:
		return LevelWarn
	case l >= slog.LevelInfo:
		return LevelInfo
	case l >= slog.LevelDebug:
		return LevelDebug
	default:
		return LevelTrace
	}
}

// slogThreshold is the lowest slog level an SLF4J logger whose effective
// level is code lets through (slf4jCode's inverse on lower bounds).
func slogThreshold(code int32) slog.Level {
	switch code {
	case LevelTrace:
		return slog.Level(math.MinInt)
	case LevelDebug:
		return slog.LevelDebug
	case LevelInfo:
		return slog.LevelInfo
	case LevelWarn:
		return slog.LevelWarn
	case LevelError:
		return slog.LevelError
	default:
		return slog.Level(math.MaxInt)
	}
}

// logLevels are the effective SLF4J levels Java reported in configureLog0,
// as slog thresholds. Immutable once built.
type logLevels struct {
	// min is the lowest threshold of any logger: Enabled's whole test.
	min slog.Level
	// byName holds every logger Java reported; a name not in it takes its
	// closest reported ancestor's (RootLogger's at worst).
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
		for i, n := range levelNames {
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
	if _, ok := lv.byName[RootLogger]; !ok {
		return nil, fmt.Errorf("nativepool: configureLog0: %q names no level for %s: %w", s, RootLogger, bridge.ErrInvalidArgument)
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
			return lv.byName[RootLogger]
		}
		name = name[:dot]
	}
}
