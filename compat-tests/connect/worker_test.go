package connect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

const (
	// workerStartTimeout covers the JVM, Jetty, joining the group and
	// reading the three internal topics on a busy 2-core machine.
	workerStartTimeout = 3 * time.Minute
	workerStopTimeout  = time.Minute
)

// worker is one Connect worker process with its properties, log and REST
// address; its data lives in Brook, so a restart starts the same process
// again with the same properties.
type worker struct {
	t        *testing.T
	propPath string
	logPath  string
	rest     string // http://127.0.0.1:port
	cmd      *exec.Cmd
	exited   chan struct{}
}

// startWorker writes the worker's properties, with overrides on top of
// the defaults here, and starts it.
func startWorker(t *testing.T, bootstrap string, overrides map[string]string) *worker {
	t.Helper()
	dir := t.TempDir()
	port := testutil.FreePort(t)
	w := &worker{
		t:        t,
		propPath: filepath.Join(dir, "worker.properties"),
		logPath:  filepath.Join(dir, "worker.log"),
		rest:     fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	props := map[string]string{
		"bootstrap.servers":                       bootstrap,
		"group.id":                                "brook-connect",
		"listeners":                               w.rest,
		"rest.advertised.host.name":               "127.0.0.1",
		"key.converter":                           "org.apache.kafka.connect.json.JsonConverter",
		"value.converter":                         "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":            "false",
		"value.converter.schemas.enable":          "false",
		"config.storage.topic":                    "connect-configs",
		"offset.storage.topic":                    "connect-offsets",
		"status.storage.topic":                    "connect-status",
		"config.storage.replication.factor":       "1",
		"offset.storage.replication.factor":       "1",
		"status.storage.replication.factor":       "1",
		"offset.flush.interval.ms":                "500",
		"scheduled.rebalance.max.delay.ms":        "0",
		"exactly.once.source.support":             "disabled",
		"connector.client.config.override.policy": "All",
	}
	for k, v := range overrides {
		props[k] = v
	}
	var b strings.Builder
	for k, v := range props {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	if err := os.WriteFile(w.propPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.stop()
		exec.Command("cp", w.logPath, "/tmp/connect-worker.log").Run()
		if t.Failed() {
			t.Logf("--- connect worker log: errors (%s) ---\n%s", w.logPath, errorLines(w.logPath, 40))
			t.Logf("--- connect worker log tail (%s) ---\n%s", w.logPath, tail(w.logPath, 60))
		}
	})
	w.start()
	return w
}

// start launches the worker and waits until its REST API answers.
func (w *worker) start() {
	w.t.Helper()
	root, err := testutil.ModuleRoot()
	if err != nil {
		w.t.Fatal(err)
	}
	logFile, err := os.OpenFile(w.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		w.t.Fatal(err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== test: worker start ===\n")
	cmd := exec.Command(filepath.Join(root, "compat-tests", "bin", "connect-distributed.sh"), w.propPath)
	cmd.Env = append(os.Environ(), "BROOK_TOOL_LOG_LEVEL=info")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("start connect worker: %v", err)
	}
	w.cmd, w.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(w.exited) }()
	if err := testutil.Poll(workerStartTimeout, func() error {
		select {
		case <-w.exited:
			return errors.New("connect worker exited")
		default:
		}
		_, err := w.get("/connectors")
		return err
	}); err != nil {
		w.t.Fatalf("connect worker REST API: %v\n%s", err, tail(w.logPath, 60))
	}
}

// stop sends SIGTERM (the worker flushes source offsets and commits sink
// offsets on the way out) and waits, killing it after workerStopTimeout.
func (w *worker) stop() {
	if w.cmd == nil {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(workerStopTimeout):
		w.t.Errorf("connect worker did not stop within %v of SIGTERM; killing it", workerStopTimeout)
		_ = w.cmd.Process.Kill()
		<-w.exited
	}
	w.cmd = nil
}

// kill9 ends the worker with SIGKILL: no offset flush, no transaction
// commit or abort, no LeaveGroup.
func (w *worker) kill9() {
	w.t.Helper()
	if w.cmd == nil {
		return
	}
	_ = w.cmd.Process.Kill()
	<-w.exited
	w.cmd = nil
}

func (w *worker) restart() {
	w.t.Helper()
	w.stop()
	w.start()
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// get returns the body of a 200 answer to GET path.
func (w *worker) get(path string) ([]byte, error) {
	resp, err := httpClient.Get(w.rest + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return body, nil
}

// createConnector POSTs a connector; the worker answers 201 once the
// config is written to the config topic. A 409 (rebalance in progress)
// is retried.
func (w *worker) createConnector(name string, config map[string]string) {
	w.t.Helper()
	body, err := json.Marshal(map[string]any{"name": name, "config": config})
	if err != nil {
		w.t.Fatal(err)
	}
	testutil.Eventually(w.t, 2*time.Minute, func() error {
		resp, err := httpClient.Post(w.rest+"/connectors", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("POST /connectors %s: %s: %s", name, resp.Status, answer)
		}
		return nil
	})
}

// connectorStatus is the part of GET /connectors/NAME/status checked here.
type connectorStatus struct {
	Connector struct {
		State string `json:"state"`
	} `json:"connector"`
	Tasks []struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
}

// waitRunning waits until the connector and its one task are RUNNING.
func (w *worker) waitRunning(name string) {
	w.t.Helper()
	testutil.Eventually(w.t, 2*time.Minute, func() error {
		body, err := w.get("/connectors/" + name + "/status")
		if err != nil {
			return err
		}
		var st connectorStatus
		if err := json.Unmarshal(body, &st); err != nil {
			return fmt.Errorf("status of %s: %w: %s", name, err, body)
		}
		if st.Connector.State != "RUNNING" || len(st.Tasks) != 1 || st.Tasks[0].State != "RUNNING" {
			return fmt.Errorf("status of %s: %s", name, body)
		}
		return nil
	})
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// errorLines returns the worker log's ERROR lines with the stack trace
// lines after each, at most n lines in all: a REST call that fails with
// 500 leaves its cause only there.
func errorLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var out []string
	inTrace := false
	for _, line := range strings.Split(string(data), "\n") {
		trace := strings.HasPrefix(line, "\tat ") || strings.HasPrefix(line, "Caused by:")
		if strings.Contains(line, " ERROR ") || (inTrace && trace) {
			out = append(out, line)
			inTrace = true
		} else {
			inTrace = false
		}
		if len(out) >= n {
			break
		}
	}
	return strings.Join(out, "\n")
}
