package kcat

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// createTopic creates topic with partitions through franz-go's admin client.
func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// kcatMessage is one message of kcat -C -J.
type kcatMessage struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Headers   []string `json:"headers"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
}

func TestKcatMetadata(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	adm := kadm.NewClient(testutil.Client(t, env.Addr()))
	createTopic(t, adm, "compat-kcat-meta", 4)

	out, errOut := env.Kcat(nil, "-b", env.Addr(), "-L", "-t", "compat-kcat-meta")
	want := []string{
		"1 brokers:",
		fmt.Sprintf("broker 0 at %s (controller)", env.Addr()),
		`topic "compat-kcat-meta" with 4 partitions:`,
	}
	for p := range 4 {
		want = append(want, fmt.Sprintf("partition %d, leader 0, replicas: 0, isrs: 0", p))
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			env.Errorf(out, errOut, "kcat -L: output lacks %q", w)
		}
	}
}

func TestKcatProduceConsume(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	adm := kadm.NewClient(testutil.Client(t, env.Addr()))
	const topic = "compat-kcat"
	createTopic(t, adm, topic, 1)

	lines := []string{"k1:hello", "k2:value with spaces", "k3:ünïcode", "k4:"}
	env.Kcat(strings.NewReader(strings.Join(lines, "\n")+"\n"),
		"-b", env.Addr(), "-P", "-t", topic, "-K:", "-H", "trace=abc", "-H", "n=1", "-X", "acks=all")

	out, errOut := env.Kcat(nil, "-b", env.Addr(), "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q")
	got := harness.Lines(out)
	if len(got) != len(lines) {
		env.Fatalf(out, errOut, "kcat -C -e: %d messages, want %d", len(got), len(lines))
	}
	for i, line := range got {
		var m kcatMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			env.Fatalf(out, errOut, "message %d: %v", i, err)
		}
		key, value, _ := strings.Cut(lines[i], ":")
		ok := m.Topic == topic && m.Partition == 0 && m.Offset == int64(i) &&
			m.Key != nil && *m.Key == key && slices.Equal(m.Headers, []string{"trace", "abc", "n", "1"})
		// kcat prints an empty payload as null.
		ok = ok && (m.Payload != nil && *m.Payload == value || m.Payload == nil && value == "")
		if !ok {
			env.Errorf(out, errOut, "message %d = %s, want offset %d key %q payload %q headers trace=abc,n=1", i, line, i, key, value)
		}
	}

	// A consumer with -o and an offset reads from there.
	out, errOut = env.Kcat(nil, "-b", env.Addr(), "-C", "-t", topic, "-p", "0", "-o", "2", "-e", "-q", "-f", "%o %k %s\n")
	if want := "2 k3 ünïcode\n3 k4 \n"; out != want {
		env.Errorf(out, errOut, "kcat -C -o 2: got %q, want %q", out, want)
	}
}
