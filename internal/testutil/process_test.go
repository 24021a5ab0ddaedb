package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func startsCount(t *testing.T, p *Process) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(p.DataDir(), "starts"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestProcessLifecycle(t *testing.T) {
	p := StartBrook(t, fakeBin, nil)
	if err := waitReady(p.Addr(), nil, 10*time.Second); err != nil {
		t.Fatalf("broker not answering after StartBrook: %v", err)
	}
	pid := p.PID()
	if pid == 0 {
		t.Fatal("PID() = 0 for a running broker")
	}
	if got := startsCount(t, p); got != "1" {
		t.Errorf("starts = %s, want 1", got)
	}
	if tail := p.LogTail(5); !strings.Contains(tail, "listening") {
		t.Errorf("LogTail misses the broker's stderr: %q", tail)
	}
	props, err := os.ReadFile(filepath.Join(filepath.Dir(p.DataDir()), "server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(props), "log.dirs="+p.DataDir()+"\n") {
		t.Errorf("server.properties lacks log.dirs:\n%s", props)
	}

	port := p.Port()
	p.Kill9()
	if p.PID() != 0 {
		t.Error("PID() != 0 after Kill9")
	}
	if err := waitReady(p.Addr(), closedChan(), time.Second); err == nil {
		t.Error("broker still answers after Kill9")
	}

	p.Restart()
	if p.Port() != port {
		t.Errorf("port changed across Restart: %d -> %d", port, p.Port())
	}
	if got := startsCount(t, p); got != "2" {
		t.Errorf("starts = %s after Restart, want 2 (data dir kept)", got)
	}
	if p.PID() == pid || p.PID() == 0 {
		t.Errorf("PID after Restart = %d, old %d", p.PID(), pid)
	}

	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if tail := p.LogTail(2); !strings.Contains(tail, "shutting down") {
		t.Errorf("log tail after Stop = %q, want the SIGTERM message", tail)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	p.Restart()
	if got := startsCount(t, p); got != "3" {
		t.Errorf("starts = %s after the second Restart, want 3", got)
	}
}

func closedChan() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// fatalRecorder lets a test watch StartBrook fail without failing itself.
type fatalRecorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.msg = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func TestStartBrookReportsEarlyExit(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	done := make(chan *Process)
	go func() {
		var p *Process
		defer func() { done <- p }()
		p = StartBrook(rec, fakeBin, map[string]string{"fake.exit.code": "3"})
	}()
	if p := <-done; p != nil {
		t.Fatal("StartBrook returned a process that exited at start")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !strings.Contains(rec.msg, ErrExited.Error()) {
		t.Errorf("failure = %q, want it to mention %q", rec.msg, ErrExited)
	}
	if !strings.Contains(rec.msg, "exiting early as configured") {
		t.Errorf("failure lacks the broker's log tail: %q", rec.msg)
	}
}

func TestStopReportsUncleanExit(t *testing.T) {
	p := StartBrook(t, fakeBin, map[string]string{"fake.term.exit.code": "4"})
	err := p.Stop()
	if err == nil || !strings.Contains(err.Error(), "exit status 4") {
		t.Errorf("Stop = %v, want exit status 4", err)
	}
	// The process is gone now, so a second Stop has nothing to report.
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop = %v, want nil", err)
	}
}

func TestStopAfterKill9IsNoop(t *testing.T) {
	p := StartBrook(t, fakeBin, nil)
	p.Kill9()
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after Kill9 = %v, want nil", err)
	}
}
