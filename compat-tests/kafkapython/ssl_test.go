package kafkapython

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// TestKafkaPythonSSL: kafka-python with a client certificate (PEM files)
// on an SSL listener that requires one, checking the broker's host name:
// create and list topics, produce with acks=all, consume.
func TestKafkaPythonSSL(t *testing.T) {
	env := harness.StartTLS(t, brookBin, nil)
	const topic = "py-ssl"
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python(t), filepath.Join("testdata", "ssl_scenario.py"),
		env.SSLAddr, env.CAFile, env.ClientCertFile, env.ClientKeyFile, topic)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		env.Fatalf(stdout.String(), stderr.String(), "ssl_scenario.py: %v", err)
	}
	var r struct {
		Topics  []string `json:"topics"`
		Offsets []int64  `json:"offsets"`
		Read    [][3]any `json:"read"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		env.Fatalf(stdout.String(), stderr.String(), "ssl_scenario.py report: %v", err)
	}
	if !slices.Contains(r.Topics, topic) {
		t.Errorf("list_topics over SSL: %v lacks %s", r.Topics, topic)
	}
	if !slices.Equal(r.Offsets, []int64{0, 1, 2}) {
		t.Errorf("produce offsets %v, want 0 1 2", r.Offsets)
	}
	for i, rec := range r.Read {
		if got, want := fmt.Sprint(rec), fmt.Sprintf("[%d k%d secret %d]", i, i, i); got != want {
			t.Errorf("record %d: %s, want %s", i, got, want)
		}
	}
	if len(r.Read) != 3 {
		t.Errorf("read %d records, want 3", len(r.Read))
	}
}
