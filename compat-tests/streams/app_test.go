package streams

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// compileTimeout bounds javac on a busy 2-core machine.
const compileTimeout = 2 * time.Minute

// streamsLibs is the directory of kafka-streams and its dependencies.
func streamsLibs(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("BROOK_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("streams jars: %v", err)
		}
		cache = filepath.Join(home, ".cache", "brook")
	}
	libs := filepath.Join(cache, "streams", "libs")
	jars, _ := filepath.Glob(filepath.Join(libs, "kafka-streams-*.jar"))
	if len(jars) == 0 {
		t.Fatalf("no kafka-streams jar in %s: run scripts/deps.sh --streams", libs)
	}
	return libs
}

// compileApp compiles app/WordCount.java into a temp dir and returns the
// classpath that runs it.
func compileApp(t *testing.T) string {
	t.Helper()
	libs := streamsLibs(t)
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "compat-tests", "streams", "app", "WordCount.java")
	classes := t.TempDir()
	cp := filepath.Join(libs, "*")
	cmd := exec.Command("javac", "-cp", cp, "-d", classes, src)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start javac: %v", err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("javac %s: %v\n%s", src, err, out.String())
		}
	case <-time.After(compileTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("javac %s: timed out after %v", src, compileTimeout)
	}
	return classes + string(os.PathListSeparator) + cp
}

// logBuffer is an app's combined output, written by the process and read
// by the test.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// app is one WordCount instance. Its state dir outlives restarts, as a
// real deployment's would, so a restarted instance keeps its process id
// (and so its transactional.id, which fences the killed producer).
type app struct {
	t        *testing.T
	name     string
	cp       string
	args     []string
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	out      *logBuffer
	previous []string // output of earlier runs, for failure reports
}

func newApp(t *testing.T, name, cp string, args ...string) *app {
	a := &app{t: t, name: name, cp: cp, args: args}
	t.Cleanup(func() {
		a.kill()
		if t.Failed() {
			t.Logf("--- %s output (tail) ---\n%s", a.name, tail(a.output(), 200))
		}
	})
	return a
}

// start launches the instance; it runs until kill.
func (a *app) start() {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out = &logBuffer{}
	a.cmd = exec.Command("java", append([]string{"-Xmx256m", "-cp", a.cp, "WordCount"}, a.args...)...)
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out
	// A test binary that dies (go test's -timeout panics without running
	// cleanups) takes the JVM with it instead of leaving it running.
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		a.t.Fatalf("start %s: %v", a.name, err)
	}
	a.done = make(chan struct{})
	cmd, done := a.cmd, a.done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
}

// kill sends SIGKILL, so the instance gets no chance to commit, abort or
// leave its group, and waits for it to exit.
func (a *app) kill() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return
	}
	_ = a.cmd.Process.Kill()
	<-a.done
	a.previous = append(a.previous, a.out.String())
	a.cmd = nil
}

// exited reports an error if the running instance has died on its own.
func (a *app) exited() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return nil
	}
	select {
	case <-a.done:
		return fmt.Errorf("%s exited: %v", a.name, a.cmd.ProcessState)
	default:
		return nil
	}
}

// running reports whether the instance logged Streams' RUNNING state.
func (a *app) running() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out != nil && strings.Contains(a.out.String(), "STATE RUNNING")
}

func (a *app) output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	all := append([]string(nil), a.previous...)
	if a.cmd != nil {
		all = append(all, a.out.String())
	}
	return strings.Join(all, "\n--- restarted ---\n")
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
