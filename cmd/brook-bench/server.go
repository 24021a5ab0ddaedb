package main

import (
	"bufio"
	"bytes"
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
)

const (
	serverStartTimeout = 120 * time.Second
	serverStopTimeout  = 60 * time.Second
)

// serverSpec says how to run one broker under test. prepare, if set, runs
// to completion before the timed start (Kafka's storage format), so cold
// start covers only the broker process itself.
type serverSpec struct {
	name    string
	prepare []string
	argv    []string
	// env, if set, is the server's whole environment.
	env []string
	// sigtermStatus is an exit status that still means a clean SIGTERM
	// shutdown (the JVM exits 143 = 128+15 after its shutdown hooks).
	sigtermStatus int
}

// serverProcess is a broker this program started for itself, alone on the
// machine, in its own temp dir.
type serverProcess struct {
	spec      serverSpec
	cmd       *exec.Cmd
	addr      string
	dir       string
	logPath   string
	exited    chan struct{}
	coldStart time.Duration
}

// newServerDir makes the temp dir a server keeps its data and log in, and
// picks its loopback port.
func newServerDir(name string) (dir, addr string, port int, err error) {
	port, err = freePort()
	if err != nil {
		return "", "", 0, fmt.Errorf("find a free port: %w", err)
	}
	dir, err = os.MkdirTemp("", "brook-bench-"+name+"-")
	if err != nil {
		return "", "", 0, fmt.Errorf("temp dir: %w", err)
	}
	return dir, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port, nil
}

// brookSpec runs bin with data in dir/data on addr, and the settings
// overrides (KEY=VALUE) after the ones it needs, so that they win.
func brookSpec(bin, dir, addr string, overrides ...string) (serverSpec, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return serverSpec{}, fmt.Errorf("brook binary %s: %w", bin, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return serverSpec{}, fmt.Errorf("brook binary: %w (run make build, or pass --brokers)", err)
	}
	argv := []string{abs,
		"--override", "listeners=PLAINTEXT://" + addr,
		"--override", "log.dirs=" + filepath.Join(dir, "data"),
		"--override", "broker.id=0",
	}
	for _, kv := range overrides {
		argv = append(argv, "--override", kv)
	}
	return serverSpec{name: "brook", argv: argv}, nil
}

// kafkaSpec runs scripts/kafka-server.sh (which execs java, so the PID is
// the JVM's) on port, with its controller on a second free port.
func kafkaSpec(script, dir string, port int) (serverSpec, error) {
	abs, err := filepath.Abs(script)
	if err != nil {
		return serverSpec{}, fmt.Errorf("kafka script %s: %w", script, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return serverSpec{}, fmt.Errorf("kafka script: %w", err)
	}
	ctrl, err := freePort()
	if err != nil {
		return serverSpec{}, fmt.Errorf("find a free controller port: %w", err)
	}
	args := []string{strconv.Itoa(port), filepath.Join(dir, "kafka"), "--controller-port", strconv.Itoa(ctrl)}
	return serverSpec{
		name:          "kafka",
		prepare:       append([]string{abs, "format"}, args...),
		argv:          append([]string{abs, "start"}, args...),
		sigtermStatus: 128 + int(syscall.SIGTERM),
	}, nil
}

// startServer runs spec's prepare step, then starts the server and waits
// until it answers ApiVersions. Cold start is the time from just before
// the exec to that first answer.
func startServer(ctx context.Context, spec serverSpec, dir, addr string) (*serverProcess, error) {
	s := &serverProcess{spec: spec, addr: addr, dir: dir, logPath: filepath.Join(dir, spec.name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s log: %w", spec.name, err)
	}
	defer logFile.Close()
	if len(spec.prepare) > 0 {
		prep := exec.CommandContext(ctx, spec.prepare[0], spec.prepare[1:]...)
		prep.Stdout, prep.Stderr = logFile, logFile
		prep.Env = spec.env
		if err := prep.Run(); err != nil {
			tail := s.logTail(20)
			os.RemoveAll(dir)
			return nil, fmt.Errorf("prepare %s: %w\n--- log tail ---\n%s", spec.name, err, tail)
		}
	}
	s.cmd = exec.Command(spec.argv[0], spec.argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.Env = spec.env
	started := time.Now()
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", spec.argv[0], err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	readyCtx, cancel := context.WithTimeout(ctx, serverStartTimeout)
	defer cancel()
	ready, err := waitReady(readyCtx, addr, s.exited)
	if err != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
		tail := s.logTail(20)
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s: %w\n--- log tail ---\n%s", spec.name, err, tail)
	}
	s.coldStart = ready.Sub(started)
	return s, nil
}

func (s *serverProcess) pid() int { return s.cmd.Process.Pid }

// peakRSS is the process's resident set high-water mark so far (VmHWM).
func (s *serverProcess) peakRSS() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid()))
	if err != nil {
		return 0, fmt.Errorf("read %s status: %w", s.spec.name, err)
	}
	return parseVmHWM(data)
}

// userHZ is the kernel's USER_HZ, the unit of /proc/PID/stat CPU times;
// 100 on every Linux architecture Go supports.
const userHZ = 100

// cpuTimes is a process's CPU time so far, in user space and in the
// kernel: for a broker serving reads with sendfile the kernel's share is
// the copy and the TCP stack, which no change in the broker's code saves.
type cpuTimes struct {
	user, system time.Duration
}

func (c cpuTimes) total() time.Duration { return c.user + c.system }

func (c cpuTimes) sub(d cpuTimes) cpuTimes {
	return cpuTimes{user: c.user - d.user, system: c.system - d.system}
}

// cpuTime is the CPU time (user + system) the process has used so far.
func (s *serverProcess) cpuTime() (time.Duration, error) {
	c, err := s.cpuTimes()
	return c.total(), err
}

func (s *serverProcess) cpuTimes() (cpuTimes, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid()))
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read %s stat: %w", s.spec.name, err)
	}
	return parseStatCPU(data)
}

// parseStatCPU returns utime and stime of a /proc/PID/stat line. The
// command name in parentheses may hold spaces, so fields are counted after
// the last ')': state is field 3, utime 14 and stime 15.
func parseStatCPU(stat []byte) (cpuTimes, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return cpuTimes{}, errors.New("stat: no ')' after the command name")
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return cpuTimes{}, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(fields))
	}
	var ticks [2]int64
	for j, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return cpuTimes{}, fmt.Errorf("stat: bad CPU time %q", f)
		}
		ticks[j] = n
	}
	return cpuTimes{user: time.Duration(ticks[0]) * time.Second / userHZ, system: time.Duration(ticks[1]) * time.Second / userHZ}, nil
}

// parseVmHWM returns the VmHWM line of a /proc/PID/status file in bytes.
func parseVmHWM(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("VmHWM line %q: want <n> kB", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("VmHWM line %q: bad number", sc.Text())
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmHWM line in status")
}

// stop sends SIGTERM, waits, falls back to SIGKILL, and removes the temp
// dir. A server that needed SIGKILL or exited uncleanly is an error.
func (s *serverProcess) stop() error {
	defer os.RemoveAll(s.dir)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM %s pid %d: %w", s.spec.name, s.pid(), err)
	}
	timer := time.NewTimer(serverStopTimeout)
	defer timer.Stop()
	select {
	case <-s.exited:
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("%s pid %d ignored SIGTERM for %v; killed", s.spec.name, s.pid(), serverStopTimeout)
	}
	state := s.cmd.ProcessState
	if state == nil || state.Success() || (s.spec.sigtermStatus != 0 && state.ExitCode() == s.spec.sigtermStatus) {
		return nil
	}
	return fmt.Errorf("%s pid %d exited with %v\n--- log tail ---\n%s", s.spec.name, s.pid(), state, s.logTail(20))
}

func (s *serverProcess) logTail(n int) string {
	data, err := os.ReadFile(s.logPath)
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
