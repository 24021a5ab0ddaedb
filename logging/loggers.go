package logging

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Root is the name of the root logger, as in log4j.
const Root = "root"

// Kafka's levels as slog levels; TRACE is below slog's DEBUG and FATAL
// above its ERROR.
const (
	LevelTrace = slog.LevelDebug - 4
	LevelFatal = slog.LevelError + 4
)

var levelNames = []struct {
	name  string
	level slog.Level
}{{"TRACE", LevelTrace}, {"DEBUG", slog.LevelDebug}, {"INFO", slog.LevelInfo}, {"WARN", slog.LevelWarn}, {"ERROR", slog.LevelError}, {"FATAL", LevelFatal}}

// ParseLevel reads one of Kafka's level names (upper case, as Kafka
// requires).
func ParseLevel(s string) (slog.Level, error) {
	for _, l := range levelNames {
		if l.name == s {
			return l.level, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrInvalidLevel, s)
}

// LevelName is the Kafka name of a level, the nearest one at or below it.
func LevelName(level slog.Level) string {
	name := levelNames[0].name
	for _, l := range levelNames {
		if level >= l.level {
			name = l.name
		}
	}
	return name
}

// Errors of Set and Unset, which the broker maps to Kafka's codes.
var (
	ErrNoSuchLogger = errors.New("logging: no such logger")
	ErrInvalidLevel = errors.New("logging: not a log level (valid: DEBUG, ERROR, FATAL, INFO, TRACE, WARN)")
	ErrRootRequired = errors.New("logging: removing the log level of the root logger is not allowed")
)

// Loggers is one broker's set of named loggers over one handler.
type Loggers struct {
	base slog.Handler

	mu sync.Mutex
	// set holds the levels set explicitly; root is always there.
	set map[string]slog.Level
	// effective holds each registered logger's level, recomputed on
	// every change and read lock-free by its handler.
	effective map[string]*slog.LevelVar
}

// New returns the loggers writing to base with root at level. base should
// let every level through (NewHandler does): the loggers decide.
func New(base slog.Handler, root slog.Level) *Loggers {
	l := &Loggers{base: base, set: map[string]slog.Level{Root: root}, effective: map[string]*slog.LevelVar{}}
	l.register(Root)
	return l
}

// Of returns the Loggers behind logger when it is one of theirs, and
// otherwise new Loggers over its handler with root at the lowest level the
// logger lets through, so that a broker given any logger has named ones.
func Of(logger *slog.Logger) *Loggers {
	if h, ok := logger.Handler().(*handler); ok {
		return h.loggers
	}
	root := LevelFatal
	for _, l := range slices.Backward(levelNames) {
		if logger.Enabled(context.Background(), l.level) {
			root = l.level
		}
	}
	return New(logger.Handler(), root)
}

// Logger returns the logger of name, registering it: it then shows in
// Levels and its level can be set. Records carry logger=name.
func (l *Loggers) Logger(name string) *slog.Logger {
	v := l.register(name)
	h := l.base
	if name != Root {
		h = h.WithAttrs([]slog.Attr{slog.String("logger", name)})
	}
	return slog.New(&handler{loggers: l, level: v, inner: h})
}

func (l *Loggers) register(name string) *slog.LevelVar {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.effective[name]; ok {
		return v
	}
	v := new(slog.LevelVar)
	v.Set(l.resolveLocked(name))
	l.effective[name] = v
	return v
}

// resolveLocked is name's level: its own, its nearest ancestor's, or root's.
func (l *Loggers) resolveLocked(name string) slog.Level {
	for n := name; ; {
		if lv, ok := l.set[n]; ok {
			return lv
		}
		i := strings.LastIndexByte(n, '.')
		if i <= 0 {
			return l.set[Root]
		}
		n = n[:i]
	}
}

func (l *Loggers) refreshLocked() {
	for name, v := range l.effective {
		v.Set(l.resolveLocked(name))
	}
}

// LoggerLevel is one logger and its effective level name.
type LoggerLevel struct{ Name, Level string }

// Levels lists every registered logger, root first and then by name.
func (l *Loggers) Levels() []LoggerLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LoggerLevel, 0, len(l.effective))
	for name, v := range l.effective {
		out = append(out, LoggerLevel{name, LevelName(v.Level())})
	}
	slices.SortFunc(out, func(a, b LoggerLevel) int {
		switch {
		case a.Name == Root:
			return -1
		case b.Name == Root:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// CheckSet reports whether Set(name, level) would succeed.
func (l *Loggers) CheckSet(name, level string) error {
	if err := l.checkExists(name); err != nil {
		return err
	}
	_, err := ParseLevel(level)
	return err
}

// CheckUnset reports whether Unset(name) would succeed.
func (l *Loggers) CheckUnset(name string) error {
	if err := l.checkExists(name); err != nil {
		return err
	}
	if name == Root {
		return ErrRootRequired
	}
	return nil
}

func (l *Loggers) checkExists(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.effective[name]; !ok {
		return fmt.Errorf("%w: %s", ErrNoSuchLogger, name)
	}
	return nil
}

// Set gives a registered logger its own level; loggers below it without
// a level of their own follow.
func (l *Loggers) Set(name, level string) error {
	if err := l.CheckSet(name, level); err != nil {
		return err
	}
	lv, _ := ParseLevel(level)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set[name] = lv
	l.refreshLocked()
	return nil
}

// Unset removes a logger's own level: it inherits again.
func (l *Loggers) Unset(name string) error {
	if err := l.CheckUnset(name); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.set, name)
	l.refreshLocked()
	return nil
}

// handler filters by its logger's effective level before the base handler.
type handler struct {
	loggers *Loggers
	level   *slog.LevelVar
	inner   slog.Handler
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.level.Level() && h.inner.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error { return h.inner.Handle(ctx, r) }

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{loggers: h.loggers, level: h.level, inner: h.inner.WithAttrs(attrs)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{loggers: h.loggers, level: h.level, inner: h.inner.WithGroup(name)}
}
