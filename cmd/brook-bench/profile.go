package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"

	"github.com/brook-mq/brook/broker"
	"github.com/brook-mq/brook/config"
)

// profileInProcess runs a Brook broker inside this process with a CPU
// profile on, and drives it from a child brook-bench (this binary with
// --brokers), so the profile holds the broker's work and none of the
// client's. It writes the CPU profile to path and an allocation profile
// to path+".allocs".
func profileInProcess(ctx context.Context, o options, path string, out io.Writer) (err error) {
	dir, err := os.MkdirTemp("", "brook-bench-profile-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	logFile, err := os.Create(filepath.Join(dir, "brook.log"))
	if err != nil {
		return fmt.Errorf("broker log: %w", err)
	}
	defer logFile.Close()
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelWarn}))

	cfg, _, err := inProcessConfig(o, dir)
	if err != nil {
		return fmt.Errorf("broker config: %w", err)
	}
	b, err := broker.New(cfg, logger)
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	runCtx, stopBroker := context.WithCancel(ctx)
	defer stopBroker()
	runDone := make(chan error, 1)
	go func() { runDone <- b.Run(runCtx) }()
	defer func() {
		stopBroker()
		if runErr := <-runDone; runErr != nil && err == nil {
			err = fmt.Errorf("broker run: %w", runErr)
		}
	}()
	addr := b.Addrs()[0].String()
	if _, err := waitReady(ctx, addr, nil); err != nil {
		return err
	}

	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("start cpu profile: %w", err)
	}
	fmt.Fprintf(out, "brook-bench: in-process brook on %s, CPU profile to %s\n", addr, path)
	loadErr := runChildLoad(ctx, o, addr, out)
	pprof.StopCPUProfile()
	if err := writeAllocs(path + ".allocs"); err != nil {
		return err
	}
	return loadErr
}

// inProcessConfig is the in-process brook's configuration in dir, with
// --brook-override's settings applied last, as brookSpec does for a brook
// it starts.
func inProcessConfig(o options, dir string) (*config.Broker, []string, error) {
	return config.Load("", append([]string{
		"listeners=PLAINTEXT://127.0.0.1:0",
		"log.dirs=" + filepath.Join(dir, "data"),
		"broker.id=0",
	}, o.brookOverrides...))
}

// runChildLoad runs this binary's own workload against addr in a child
// process with the same workload flags.
func runChildLoad(ctx context.Context, o options, addr string, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, childLoadArgs(o, addr)...)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("load process: %w", err)
	}
	return nil
}

// childLoadArgs are the flags of runChildLoad's workload.
func childLoadArgs(o options, addr string) []string {
	args := []string{
		"--brokers", addr,
		"--records", strconv.Itoa(o.records),
		"--record-size", strconv.Itoa(o.recordSize),
		"--partitions", strconv.Itoa(o.partitions),
		"--acks", o.acks,
		"--txn-interval", o.txnInterval.String(),
		"--compression", o.compression,
		"--linger", o.linger.String(),
		"--batch-bytes", strconv.Itoa(o.batchBytes),
		"--fetch-max-wait", o.fetchMaxWait.String(),
		"--max-inflight", strconv.Itoa(o.maxInflight),
		"--rate", strconv.Itoa(o.rate),
		"--timeout", o.timeout.String(),
		"--perf-script", o.perfScript,
	}
	if o.produceOnly {
		// --produce-only refuses a --consume.
		return append(args, "--produce-only")
	}
	return append(args, "--consume", o.consume)
}

func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("allocs profile: %w", err)
	}
	runtime.GC()
	werr := pprof.Lookup("allocs").WriteTo(f, 0)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("write allocs profile %s: %w", path, err)
	}
	return nil
}
