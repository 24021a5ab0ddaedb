// Command brook runs one Brook broker.
//
//	brook [--config server.properties] [--config-env] [--override key=value ...]
//	brook healthcheck [HOST:PORT]
//
// The properties file and overrides use Apache Kafka's key names. With
// --config-env, KAFKA_CFG_* and KAFKA_* environment variables name configs
// as in the common Kafka container images (config.FromEnv), above the file
// and below --override. Unknown keys are logged and ignored; a bad value
// exits with status 2. SIGTERM and SIGINT stop the broker cleanly.
//
// healthcheck exits 0 when the broker at HOST:PORT (127.0.0.1:9092 by
// default) answers ApiVersions, 1 otherwise: the container image's
// HEALTHCHECK.
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
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		addr := "127.0.0.1:9092"
		if len(os.Args) > 2 {
			addr = os.Args[2]
		}
		if err := healthcheck(addr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fs := flag.NewFlagSet("brook", flag.ContinueOnError)
	configPath := fs.String("config", "", "server.properties `file` (Kafka key names)")
	var ovr overrides
	fs.Var(&ovr, "override", "a `key=value` config that wins over the file; repeatable")
	fromEnv := fs.Bool("config-env", false, "also read configs from KAFKA_CFG_* and KAFKA_* environment variables (dots as underscores), above the file and below --override")
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
	if *fromEnv {
		ovr = append(config.FromEnv(os.Environ()), ovr...)
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
