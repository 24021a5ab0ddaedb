package testutil

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// startTimeout bounds how long a broker may take to answer ApiVersions
	// after its process starts; recovery of a big log dir may need a while.
	startTimeout = 60 * time.Second
	// stopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	stopTimeout = 30 * time.Second
	// bindAttempts is how many ports StartBrook tries when another process
	// grabbed the free port between FreePort and the broker's bind.
	bindAttempts = 3
)

// Process is one brook broker process started by StartBrook. Its data dir
// and log file live in a per-test temp dir and survive Stop, Kill9 and
// Restart; t.Cleanup stops the process at the end of the test.
type Process struct {
	t        testing.TB
	bin      string
	dir      string
	dataDir  string
	propPath string
	logPath  string
	port     int
	// args and env, when set (StartBrookCommand), replace the
	// --config argument and the inherited environment.
	args []string
	env  []string

	// termStatus, when nonzero, is an exit status that also counts as a
	// clean stop after SIGTERM: a JVM (a Kafka broker) exits with 143.
	termStatus int

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd.Wait returned
	waitErr error         // cmd.Wait's result, set before exited closes
	starts  int
}

// StartBrook starts bin as a broker listening on 127.0.0.1 at a free port,
// with a server.properties built from Brook's test defaults and overrides
// (Kafka key names), and returns once the broker answers ApiVersions. If
// overrides sets "listeners", its first port is used as given.
func StartBrook(t testing.TB, bin string, overrides map[string]string) *Process {
	t.Helper()
	dir := t.TempDir()
	p := &Process{
		t:        t,
		bin:      bin,
		dir:      dir,
		dataDir:  filepath.Join(dir, "data"),
		propPath: filepath.Join(dir, "server.properties"),
		logPath:  filepath.Join(dir, "brook.log"),
	}
	t.Cleanup(p.cleanup)

	fixedListener := overrides["listeners"] != ""
	var lastErr error
	for attempt := 0; attempt < bindAttempts; attempt++ {
		props, err := p.properties(overrides)
		if err != nil {
			t.Fatalf("start brook: %v", err)
		}
		if err := writeProperties(p.propPath, props); err != nil {
			t.Fatalf("start brook: %v", err)
		}
		lastErr = p.startAndWait()
		if lastErr == nil {
			return p
		}
		if fixedListener || !strings.Contains(p.LogTail(20), "address already in use") {
			break
		}
	}
	t.Fatalf("start brook: %v\n--- brook log tail ---\n%s", lastErr, p.LogTail(40))
	return nil
}

// StartBrookCommand starts bin with exactly args and env (no
// server.properties, no inherited environment: a container's command and
// environment) and returns once the broker answers ApiVersions on
// 127.0.0.1:port, which args or env must make it listen on.
func StartBrookCommand(t testing.TB, bin string, args, env []string, port int) *Process {
	t.Helper()
	p := NewBrookCommand(t, bin, args, env, port)
	if err := p.startAndWait(); err != nil {
		t.Fatalf("start brook %v: %v\n--- brook log tail ---\n%s", args, err, p.LogTail(40))
	}
	return p
}

// NewBrookCommand is StartBrookCommand's process, not started yet: Start
// starts it and returns the failure for the caller to judge.
func NewBrookCommand(t testing.TB, bin string, args, env []string, port int) *Process {
	t.Helper()
	dir := t.TempDir()
	p := &Process{
		t: t, bin: bin, dir: dir, port: port,
		dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "brook.log"),
		args:    append([]string{}, args...),
		env:     append([]string{}, env...),
	}
	t.Cleanup(p.cleanup)
	return p
}

// properties merges the test defaults with overrides and records the port.
func (p *Process) properties(overrides map[string]string) (map[string]string, error) {
	props := map[string]string{
		"broker.id": "0",
		"log.dirs":  p.dataDir,
		// Kafka's own test configs drop the 3 s production delay too.
		"group.initial.rebalance.delay.ms": "0",
	}
	if l := overrides["listeners"]; l != "" {
		port, err := listenerPort(l)
		if err != nil {
			return nil, err
		}
		p.port = port
	} else {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		p.port = port
		props["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port)
	}
	maps.Copy(props, overrides)
	return props, nil
}

// listenerPort returns the port of the first entry of a Kafka listeners
// value such as "PLAINTEXT://127.0.0.1:9092,CONTROLLER://:9093".
func listenerPort(listeners string) (int, error) {
	first, _, _ := strings.Cut(listeners, ",")
	_, hostPort, ok := strings.Cut(first, "://")
	if !ok {
		return 0, fmt.Errorf("listeners %q: want NAME://host:port", listeners)
	}
	_, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return 0, fmt.Errorf("listeners %q: %w", listeners, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return 0, fmt.Errorf("listeners %q: port: %w", listeners, err)
	}
	return port, nil
}

func writeProperties(path string, props map[string]string) error {
	var b strings.Builder
	b.WriteString("# written by internal/testutil\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// startAndWait launches the process and waits until it answers ApiVersions,
// or exits, or startTimeout passes (then it is killed).
func (p *Process) startAndWait() error {
	exited, err := p.launch()
	if err != nil {
		return err
	}
	if err := waitReady(p.Addr(), exited, startTimeout); err != nil {
		p.Kill9()
		return err
	}
	return nil
}

func (p *Process) launch() (<-chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running() {
		return nil, errors.New("testutil: brook is already running")
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open brook log: %w", err)
	}
	// The child holds its own descriptor; ours is only needed for Start.
	defer logFile.Close()
	p.starts++
	fmt.Fprintf(logFile, "=== testutil: start %d of %s ===\n", p.starts, p.bin)

	args := []string{"--config", p.propPath}
	if p.args != nil {
		args = p.args
	}
	cmd := exec.Command(p.bin, args...)
	if p.env != nil {
		cmd.Env = p.env
	}
	cmd.Dir = p.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", p.bin, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.waitErr = cmd, exited, nil
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return exited, nil
}

// running reports whether the last started process has not exited yet.
// Callers hold p.mu.
func (p *Process) running() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Addr is the broker's bootstrap address, 127.0.0.1:port.
func (p *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// Port is the broker's listener port; it stays the same across Restart.
func (p *Process) Port() int { return p.port }

// DataDir is the broker's log.dirs entry (unless overridden).
func (p *Process) DataDir() string { return p.dataDir }

// LogPath is the file that receives the broker's stdout and stderr.
func (p *Process) LogPath() string { return p.logPath }

// PID is the process id of the running broker, or 0 when none runs.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop sends SIGTERM and waits for the process to exit, sending SIGKILL
// after stopTimeout. It returns nil only for a clean exit with status 0.
func (p *Process) Stop() error {
	p.mu.Lock()
	if !p.running() {
		p.mu.Unlock()
		return nil
	}
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("send SIGTERM to brook pid %d: %w", cmd.Process.Pid, err)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("brook pid %d did not exit within %v of SIGTERM; killed", cmd.Process.Pid, stopTimeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var exit *exec.ExitError
	if p.waitErr != nil && !(p.termStatus != 0 && errors.As(p.waitErr, &exit) && exit.ExitCode() == p.termStatus) {
		return fmt.Errorf("brook pid %d after SIGTERM: %w", cmd.Process.Pid, p.waitErr)
	}
	return nil
}

// AcceptTermStatus makes Stop take exit status code after SIGTERM for a
// clean stop, for a process that is not Brook: a JVM exits with 143
// (128 + SIGTERM) once its shutdown hooks ran.
func (p *Process) AcceptTermStatus(code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.termStatus = code
}

// Kill9 kills the process with SIGKILL, as a crash would, and waits for it.
func (p *Process) Kill9() {
	p.mu.Lock()
	if !p.running() {
		p.mu.Unlock()
		return
	}
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	_ = cmd.Process.Kill()
	<-exited
}

// Restart starts the broker again with the same properties, port and data
// dir, stopping it first (SIGTERM) if it still runs, and waits until it
// answers ApiVersions.
func (p *Process) Restart() {
	p.t.Helper()
	if err := p.Stop(); err != nil {
		p.t.Errorf("restart brook: %v", err)
	}
	if err := p.Start(); err != nil {
		p.t.Fatalf("restart brook: %v\n--- brook log tail ---\n%s", err, p.LogTail(40))
	}
}

// Start starts a stopped or killed broker again with the same properties,
// port and data dir and waits until it answers ApiVersions, like Restart,
// but returns the failure (ErrExited when the process ended first) for a
// test to report or survive: a chaos test checks that a broker restarted
// at once after kill -9 comes up, and carries on when it does not.
func (p *Process) Start() error {
	return p.startAndWait()
}

// LogTail returns the last n lines the broker wrote to stdout and stderr,
// across all its starts.
func (p *Process) LogTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no brook log: %v)", err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

func (p *Process) cleanup() {
	if err := p.Stop(); err != nil {
		p.t.Errorf("stop brook at cleanup: %v", err)
	}
	if p.t.Failed() {
		p.t.Logf("--- brook log tail (%s) ---\n%s", p.logPath, p.LogTail(50))
	}
}
