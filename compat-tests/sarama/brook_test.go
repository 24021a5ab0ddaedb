package sarama_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// This module has its own go.mod so that Brook's go.mod never gains
// sarama; it therefore cannot import Brook's internal/testutil and starts
// the broker itself, the same way: a process with a server.properties on a
// free loopback port, stopped at the end of the test.

const (
	startTimeout = 60 * time.Second
	logTailLines = 40
)

// brook is one broker process started for one test.
type brook struct {
	t       *testing.T
	addr    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

// brookBin is $BROOK_BIN, or cmd/brook built once by TestMain.
var brookBin string

func TestMain(m *testing.M) {
	bin, remove, err := resolveBrook()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	brookBin = bin
	code := m.Run()
	remove()
	os.Exit(code)
}

func resolveBrook() (string, func(), error) {
	if b := os.Getenv("BROOK_BIN"); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", nil, fmt.Errorf("BROOK_BIN: %w", err)
		}
		return b, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "brook-sarama-")
	if err != nil {
		return "", nil, fmt.Errorf("build brook: %w", err)
	}
	bin := filepath.Join(dir, "brook")
	// The test runs in compat-tests/sarama; Brook's module is two up.
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/brook")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build brook: %v\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// startBrook starts a single-node broker with Brook's test defaults and
// returns once it accepts TCP connections; sarama's own metadata retries
// cover the moment between accept and the first answer.
func startBrook(t *testing.T) *brook {
	t.Helper()
	return startBrookWith(t)
}

// startBrookWith is startBrook with extra server.properties lines.
func startBrookWith(t *testing.T, extra ...string) *brook {
	t.Helper()
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatalf("start brook: %v", err)
	}
	b := &brook{t: t, addr: fmt.Sprintf("127.0.0.1:%d", port),
		logPath: filepath.Join(dir, "brook.log"), done: make(chan struct{})}
	props := strings.Join([]string{
		"broker.id=0",
		"log.dirs=" + filepath.Join(dir, "data"),
		"listeners=PLAINTEXT://" + b.addr,
		"group.initial.rebalance.delay.ms=0",
	}, "\n") + "\n" + strings.Join(extra, "\n") + "\n"
	propPath := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(propPath, []byte(props), 0o644); err != nil {
		t.Fatalf("start brook: %v", err)
	}
	logFile, err := os.Create(b.logPath)
	if err != nil {
		t.Fatalf("start brook: %v", err)
	}
	b.cmd = exec.Command(brookBin, "--config", propPath)
	b.cmd.Stdout, b.cmd.Stderr = logFile, logFile
	if err := b.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start brook: %v", err)
	}
	go func() { b.cmd.Wait(); logFile.Close(); close(b.done) }()
	t.Cleanup(b.stop)

	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", b.addr, time.Second)
		if err == nil {
			c.Close()
			return b
		}
		select {
		case <-b.done:
			t.Fatalf("brook exited before listening\n%s", b.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("brook not listening on %s after %v: %v\n%s", b.addr, startTimeout, err, b.logTail())
		}
	}
}

func (b *brook) stop() {
	if b.t.Failed() {
		b.t.Logf("brook log tail (%s):\n%s", b.logPath, b.logTail())
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

func (b *brook) logTail() string {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// eventually polls f until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
