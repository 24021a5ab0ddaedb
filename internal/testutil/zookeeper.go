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
	cfgPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	jvm     ZooKeeperJVM
}

// ZooKeeperJVM sizes the server's JVM. The zero value is the small heap
// cluster tests use (256 MiB, serial collector).
type ZooKeeperJVM struct {
	Heap string // e.g. "-Xmx512M -Xms512M"; empty: -Xmx256m
	GC   string // e.g. "-XX:+UseG1GC"; empty: -XX:+UseSerialGC
}

// ScaleZooKeeperJVM gives ZooKeeper the heap Kafka's
// bin/zookeeper-server-start.sh gives it (KAFKA_HEAP_OPTS), for benchmarks
// that hold tens of thousands of partitions: at 50,000 the cluster tests'
// 256 MiB heap held 225 MiB of live data and collected in full for
// 0.2-0.5 s at a time. The collector stays the serial one: on this 2-core
// machine, G1's concurrent threads (kafka-run-class.sh's default) took CPU
// the brokers needed, and the rejoin was no faster with it.
func ScaleZooKeeperJVM() ZooKeeperJVM {
	return ZooKeeperJVM{Heap: "-Xmx512M -Xms512M"}
}

// StartZooKeeper runs a standalone ZooKeeper server on a free 127.0.0.1
// port with its data in t.TempDir(), waits until it serves requests, and
// stops it at cleanup.
func StartZooKeeper(t testing.TB) *ZooKeeper {
	t.Helper()
	return StartZooKeeperJVM(t, ZooKeeperJVM{})
}

// StartZooKeeperJVM is StartZooKeeper with the server's JVM sized by jvm.
func StartZooKeeperJVM(t testing.TB, jvm ZooKeeperJVM) *ZooKeeper {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	z := &ZooKeeper{t: t, dir: dir, logPath: filepath.Join(dir, "zookeeper.log"), cfgPath: filepath.Join(dir, "zoo.cfg"), jvm: jvm}
	if z.port, err = freePort(); err != nil {
		t.Fatalf("start zookeeper: find a free port: %v", err)
	}
	cfg := fmt.Sprintf("tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\n"+
		"clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok,stat\n",
		filepath.Join(dir, "data"), z.port)
	if err := os.WriteFile(z.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatalf("start zookeeper: %v", err)
	}
	if err := z.launch(root); err != nil {
		t.Fatalf("start zookeeper: %v", err)
	}
	t.Cleanup(z.Stop)
	if err := z.waitReady(startTimeout); err != nil {
		t.Fatalf("start zookeeper: %v\n--- zookeeper log tail ---\n%s", err, tailFile(z.logPath, 30))
	}
	return z
}

// launch starts the server process on z's config, appending to its log.
func (z *ZooKeeper) launch(root string) error {
	logFile, err := os.OpenFile(z.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(root, "compat-tests", "bin", "zookeeper-server-start.sh"), z.cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = os.Environ()
	if z.jvm.Heap != "" {
		cmd.Env = append(cmd.Env, "ZK_HEAP_OPTS="+z.jvm.Heap)
	}
	if z.jvm.GC != "" {
		cmd.Env = append(cmd.Env, "ZK_GC_OPTS="+z.jvm.GC)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	z.cmd, z.exited = cmd, exited
	return nil
}

// Restart starts the server again on the same port and data dir, stopping
// it first (SIGTERM) if it still runs, and waits until it serves. Sessions
// survive a restart that is shorter than their timeout, as in production.
func (z *ZooKeeper) Restart() {
	z.t.Helper()
	z.Stop()
	root, err := ModuleRoot()
	if err != nil {
		z.t.Fatal(err)
	}
	if err := z.launch(root); err != nil {
		z.t.Fatalf("restart zookeeper: %v", err)
	}
	if err := z.waitReady(startTimeout); err != nil {
		z.t.Fatalf("restart zookeeper: %v\n--- zookeeper log tail ---\n%s", err, tailFile(z.logPath, 30))
	}
}

// PID is the server's process id (the wrapper execs java), or 0 when it
// does not run.
func (z *ZooKeeper) PID() int {
	select {
	case <-z.exited:
		return 0
	default:
		return z.cmd.Process.Pid
	}
}

// LogPath is the file that receives the server's output, across restarts.
func (z *ZooKeeper) LogPath() string { return z.logPath }

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
