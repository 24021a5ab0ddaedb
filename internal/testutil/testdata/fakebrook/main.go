// Command fakebrook stands in for cmd/brook in testutil's own tests: it takes
// the same --config flag, listens where server.properties says, answers
// ApiVersions (and closes on anything else), counts its starts in a file in
// log.dirs and exits 0 on SIGTERM. "fake.exit.code" makes it exit at once,
// "fake.term.exit.code" sets its exit status on SIGTERM.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(logger); err != nil {
		logger.Error("fakebrook failed", "err", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	configPath := flag.String("config", "", "server.properties")
	flag.Parse()
	props, err := readProperties(*configPath)
	if err != nil {
		return err
	}
	if code := props["fake.exit.code"]; code != "" {
		n, _ := strconv.Atoi(code)
		logger.Error("exiting early as configured", "code", n)
		os.Exit(n)
	}
	starts, err := countStart(props["log.dirs"])
	if err != nil {
		return err
	}
	_, hostPort, _ := strings.Cut(props["listeners"], "://")
	ln, err := net.Listen("tcp", hostPort)
	if err != nil {
		return fmt.Errorf("listen %s: %w", hostPort, err)
	}
	logger.Info("listening", "addr", ln.Addr().String(), "start", starts)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		logger.Info("shutting down")
		if code := props["fake.term.exit.code"]; code != "" {
			n, _ := strconv.Atoi(code)
			os.Exit(n)
		}
		ln.Close()
	}()
	for {
		conn, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		go serve(conn)
	}
}

func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	props := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			props[k] = v
		}
	}
	return props, sc.Err()
}

// countStart increments the start counter kept in the data dir, so tests
// can see that data survives restarts.
func countStart(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("create log dir: %w", err)
	}
	path := filepath.Join(dir, "starts")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	n++
	return n, os.WriteFile(path, []byte(strconv.Itoa(n)), 0o644)
}

func serve(conn net.Conn) {
	defer conn.Close()
	for {
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		req := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(conn, req); err != nil || len(req) < 8 {
			return
		}
		key := int16(binary.BigEndian.Uint16(req[0:2]))
		version := int16(binary.BigEndian.Uint16(req[2:4]))
		if key != kmsg.ApiVersions.Int16() {
			return
		}
		resp := kmsg.NewApiVersionsResponse()
		max := kmsg.NewPtrApiVersionsRequest().MaxVersion()
		if version > max {
			version = 0
			resp.ErrorCode = 35 // UNSUPPORTED_VERSION, per KIP-511
		}
		resp.Version = version
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = kmsg.ApiVersions.Int16(), 0, max
		resp.ApiKeys = append(resp.ApiKeys, k)
		// ApiVersions responses always use header v0: just the correlation id.
		out := append([]byte{0, 0, 0, 0}, req[4:8]...)
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}
