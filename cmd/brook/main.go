// Command brook runs one Brook broker.
//
//	brook [--config server.properties] [--override key=value ...]
//
// The properties file and overrides use Apache Kafka's key names. Unknown
// keys are logged and ignored; a bad value exits with status 2. SIGTERM and
// SIGINT stop the broker cleanly.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/brook-mq/brook/broker"
	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/logging"
)

// overrides collects repeated --override flags.
type overrides []string

func (o *overrides) String() string     { return strings.Join(*o, ",") }
func (o *overrides) Set(v string) error { *o = append(*o, v); return nil }

// parseLogLevel reads --log-level: Kafka's level names in any case.
func parseLogLevel(s string) (slog.Level, error) {
	return logging.ParseLevel(strings.ToUpper(s))
}

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("brook", flag.ContinueOnError)
	configPath := fs.String("config", "", "server.properties `file` (Kafka key names)")
	var ovr overrides
	fs.Var(&ovr, "override", "a `key=value` config that wins over the file; repeatable")
	logLevel := fs.String("log-level", "info", "the root logger's level: trace, debug, info, warn, error or fatal (Kafka's names, any case); kafka-configs --entity-type broker-loggers changes it and other loggers' at runtime")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	// Kafka's scripts take the properties file as a positional argument.
	if *configPath == "" && fs.NArg() == 1 {
		*configPath = fs.Arg(0)
	}
	level, err := parseLogLevel(*logLevel)
	if err != nil {
		fmt.Fprintf(os.Stderr, "brook: --log-level: %v\n", err)
		return 2
	}
	cfg, warnings, err := config.Load(*configPath, ovr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "brook: %v\n", err)
		return 2
	}
	handler, err := logging.NewHandler(os.Stderr, cfg.LogFormat)
	if err != nil {
		fmt.Fprintf(os.Stderr, "brook: %v\n", err)
		return 2
	}
	logger := logging.New(handler, level).Logger(logging.Root)
	for _, w := range warnings {
		logger.Warn(w)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	b, err := broker.New(cfg, logger)
	if err != nil {
		logger.Error("start", "err", err)
		return 1
	}
	if err := b.Run(ctx); err != nil {
		logger.Error("run", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}
