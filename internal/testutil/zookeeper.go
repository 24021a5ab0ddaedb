package testutil

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// ZooKeeper is a ZooKeeper server process started by StartZooKeeper from the
// jars of scripts/deps.sh --zookeeper, for cluster tests.
type ZooKeeper struct {
	t       testing.TB
	port    int
	dir     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartZooKeeper runs a standalone ZooKeeper server on a free 127.0.0.1
// port with its data in t.TempDir(), waits until it serves requests, and
// stops it at cleanup.
func StartZooKeeper(t testing.TB) *ZooKeeper {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	z := &ZooKeeper{t: t, dir: dir, logPath: filepath.Join(dir, "zookeeper.log"), exited: make(chan struct{})}
	if z.port, err = freePort(); err != nil {
		t.Fatalf("start zookeeper: find a free port: %v", err)
	}
	cfg := fmt.Sprintf("tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\n"+
		"clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok,stat\n",
		filepath.Join(dir, "data"), z.port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatalf("start zookeeper: %v", err)
	}
	logFile, err := os.Create(z.logPath)
	if err != nil {
		t.Fatalf("start zookeeper: %v", err)
	}
	defer logFile.Close()
	z.cmd = exec.Command(filepath.Join(root, "compat-tests", "bin", "zookeeper-server-start.sh"), cfgPath)
	z.cmd.Stdout, z.cmd.Stderr = logFile, logFile
	if err := z.cmd.Start(); err != nil {
		t.Fatalf("start zookeeper: %v", err)
	}
	go func() {
		_ = z.cmd.Wait()
		close(z.exited)
	}()
	t.Cleanup(z.Stop)
	if err := z.waitReady(startTimeout); err != nil {
		t.Fatalf("start zookeeper: %v\n--- zookeeper log tail ---\n%s", err, tailFile(z.logPath, 30))
	}
	return z
}

// Connect is the zookeeper.connect value for this server, without chroot.
func (z *ZooKeeper) Connect() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(z.port)) }

// Stop sends SIGTERM (the wrapper execs java) and waits, then SIGKILL.
func (z *ZooKeeper) Stop() {
	select {
	case <-z.exited:
		return
	default:
	}
	_ = z.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-z.exited:
	case <-timer.C:
		_ = z.cmd.Process.Kill()
		<-z.exited
	}
}

// Kill9 kills the server with SIGKILL and waits for it.
func (z *ZooKeeper) Kill9() {
	_ = z.cmd.Process.Kill()
	<-z.exited
}

func (z *ZooKeeper) waitReady(timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		if lastErr = srvr(z.Connect()); lastErr == nil {
			return nil
		}
		select {
		case <-z.exited:
			return errors.New("zookeeper exited before serving")
		case <-deadline.C:
			return fmt.Errorf("zookeeper at %s not ready after %v: %w", z.Connect(), timeout, lastErr)
		case <-tick.C:
		}
	}
}

// srvr sends ZooKeeper's four-letter "srvr" command. Unlike "ruok", whose
// "imok" comes as soon as the port is open, srvr reports serving only once
// the server accepts sessions.
func srvr(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return err
	}
	answer, err := io.ReadAll(conn)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(answer, []byte("Zookeeper version:")) {
		return fmt.Errorf("srvr answered %q", answer)
	}
	return nil
}

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}
