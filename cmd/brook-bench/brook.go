package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	brookStartTimeout = 60 * time.Second
	brookStopTimeout  = 30 * time.Second
)

// brookProcess is the broker this program started for itself.
type brookProcess struct {
	cmd     *exec.Cmd
	addr    string
	dir     string
	logPath string
	exited  chan struct{}
}

// startBrook runs bin on a free loopback port with its data in a new temp
// dir and waits until it answers ApiVersions.
func startBrook(ctx context.Context, bin string) (*brookProcess, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return nil, fmt.Errorf("brook binary %s: %w", bin, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("brook binary: %w (run make build, or pass --brokers)", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	dir, err := os.MkdirTemp("", "brook-bench-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	b := &brookProcess{
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:     dir,
		logPath: filepath.Join(dir, "brook.log"),
		exited:  make(chan struct{}),
	}
	logFile, err := os.Create(b.logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("brook log: %w", err)
	}
	defer logFile.Close()
	b.cmd = exec.Command(abs,
		"--override", "listeners=PLAINTEXT://"+b.addr,
		"--override", "log.dirs="+filepath.Join(dir, "data"),
		"--override", "broker.id=0",
	)
	b.cmd.Stdout, b.cmd.Stderr = logFile, logFile
	if err := b.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", abs, err)
	}
	go func() {
		_ = b.cmd.Wait()
		close(b.exited)
	}()
	if err := b.waitReady(ctx); err != nil {
		_ = b.cmd.Process.Kill()
		<-b.exited
		tail := b.logTail(20)
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w\n--- brook log tail ---\n%s", err, tail)
	}
	return b, nil
}

func (b *brookProcess) pid() int { return b.cmd.Process.Pid }

func (b *brookProcess) waitReady(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DialTimeout(time.Second))
	if err != nil {
		return fmt.Errorf("readiness client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, brookStartTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		reqCtx, reqCancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(reqCtx, cl)
		reqCancel()
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil {
			return nil
		}
		select {
		case <-b.exited:
			return errors.New("brook exited before answering ApiVersions")
		case <-ctx.Done():
			return fmt.Errorf("brook at %s not ready: %w (last: %v)", b.addr, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM, waits, falls back to SIGKILL, and removes the temp
// dir. A broker that needed SIGKILL or exited non-zero is an error.
func (b *brookProcess) stop() error {
	defer os.RemoveAll(b.dir)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM brook pid %d: %w", b.pid(), err)
	}
	timer := time.NewTimer(brookStopTimeout)
	defer timer.Stop()
	select {
	case <-b.exited:
	case <-timer.C:
		_ = b.cmd.Process.Kill()
		<-b.exited
		return fmt.Errorf("brook pid %d ignored SIGTERM for %v; killed", b.pid(), brookStopTimeout)
	}
	if state := b.cmd.ProcessState; state != nil && !state.Success() {
		return fmt.Errorf("brook pid %d exited with %v\n--- brook log tail ---\n%s", b.pid(), state, b.logTail(20))
	}
	return nil
}

func (b *brookProcess) logTail(n int) string {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
