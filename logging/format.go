package logging

import (
	"fmt"
	"io"
	"log/slog"
)

// NewHandler is the broker's log output in format "text" (slog's
// key=value lines) or "json" (one object a line), letting every level
// through: the named loggers filter. Levels print with Kafka's names.
func NewHandler(w io.Writer, format string) (slog.Handler, error) {
	opts := &slog.HandlerOptions{Level: LevelTrace, ReplaceAttr: kafkaLevelNames}
	switch format {
	case "text":
		return slog.NewTextHandler(w, opts), nil
	case "json":
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("logging: unknown format %q (text or json)", format)
}

func kafkaLevelNames(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.LevelKey {
		if lv, ok := a.Value.Any().(slog.Level); ok {
			a.Value = slog.StringValue(LevelName(lv))
		}
	}
	return a
}
