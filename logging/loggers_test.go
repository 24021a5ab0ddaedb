package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func levelOf(t *testing.T, l *Loggers, name string) string {
	t.Helper()
	for _, e := range l.Levels() {
		if e.Name == name {
			return e.Level
		}
	}
	t.Fatalf("logger %s not listed", name)
	return ""
}

// Levels inherit as log4j's: own level, else the nearest ancestor's, else
// root's; DELETE makes a logger inherit again.
func TestLevelsInherit(t *testing.T) {
	var out bytes.Buffer
	h, err := NewHandler(&out, "text")
	if err != nil {
		t.Fatal(err)
	}
	l := New(h, slog.LevelInfo)
	rm := l.Logger("kafka.server.ReplicaManager")
	l.Logger("kafka.server")
	lg := l.Logger("kafka.log")

	steps := []struct {
		op, name, level string
		want            map[string]string
	}{
		{"", "", "", map[string]string{"root": "INFO", "kafka.server": "INFO", "kafka.server.ReplicaManager": "INFO", "kafka.log": "INFO"}},
		{"set", "kafka.server", "DEBUG", map[string]string{"kafka.server": "DEBUG", "kafka.server.ReplicaManager": "DEBUG", "kafka.log": "INFO"}},
		{"set", "kafka.server.ReplicaManager", "ERROR", map[string]string{"kafka.server": "DEBUG", "kafka.server.ReplicaManager": "ERROR"}},
		{"set", "root", "WARN", map[string]string{"kafka.log": "WARN", "kafka.server": "DEBUG"}},
		{"unset", "kafka.server", "", map[string]string{"kafka.server": "WARN", "kafka.server.ReplicaManager": "ERROR"}},
		{"unset", "kafka.server.ReplicaManager", "", map[string]string{"kafka.server.ReplicaManager": "WARN"}},
		{"set", "kafka.log", "TRACE", map[string]string{"kafka.log": "TRACE"}},
	}
	for i, s := range steps {
		switch s.op {
		case "set":
			err = l.Set(s.name, s.level)
		case "unset":
			err = l.Unset(s.name)
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for name, want := range s.want {
			if got := levelOf(t, l, name); got != want {
				t.Errorf("step %d (%s %s %s): %s is %s, want %s", i, s.op, s.name, s.level, name, got, want)
			}
		}
	}
	if got := l.Levels()[0].Name; got != Root {
		t.Errorf("first listed logger is %s, want root", got)
	}

	// The handler filters by the effective level.
	out.Reset()
	rm.Info("hidden")       // WARN
	lg.Debug("shown-trace") // TRACE
	if s := out.String(); strings.Contains(s, "hidden") || !strings.Contains(s, "shown-trace") || !strings.Contains(s, "logger=kafka.log") || !strings.Contains(s, "level=DEBUG") {
		t.Errorf("output %q: want only the kafka.log record, with its logger and Kafka's level name", s)
	}
}

func TestSetAndUnsetErrors(t *testing.T) {
	l := New(slog.DiscardHandler, slog.LevelInfo)
	l.Logger("kafka.log")
	for _, c := range []struct {
		err  error
		want error
	}{
		{l.Set("kafka.nope", "INFO"), ErrNoSuchLogger},
		{l.Set("kafka.log", "debug"), ErrInvalidLevel}, // Kafka wants upper case
		{l.Set("kafka.log", "ALL"), ErrInvalidLevel},
		{l.Unset("root"), ErrRootRequired},
		{l.Unset("kafka.nope"), ErrNoSuchLogger},
		{l.Set("root", "FATAL"), nil},
		{l.Unset("kafka.log"), nil},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("got %v, want %v", c.err, c.want)
		}
	}
}

// Of finds the Loggers behind one of their loggers, and otherwise takes
// root's level from what the given logger lets through.
func TestOf(t *testing.T) {
	l := New(slog.DiscardHandler, slog.LevelInfo)
	if Of(l.Logger(Root)) != l {
		t.Errorf("Of did not find the loggers of one of their loggers")
	}
	plain := slog.New(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if got := levelOf(t, Of(plain), Root); got != "WARN" {
		t.Errorf("root of a WARN logger is %s", got)
	}
}

func TestJSONFormat(t *testing.T) {
	var out bytes.Buffer
	h, err := NewHandler(&out, "json")
	if err != nil {
		t.Fatal(err)
	}
	New(h, LevelTrace).Logger("kafka.controller").Debug("elected", "epoch", 3)
	var rec map[string]any
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON object: %q: %v", out.String(), err)
	}
	if rec["level"] != "DEBUG" || rec["logger"] != "kafka.controller" || rec["msg"] != "elected" || rec["epoch"] != 3.0 {
		t.Errorf("record %v", rec)
	}
	if _, err := NewHandler(&out, "xml"); err == nil {
		t.Errorf("format xml accepted")
	}
}
