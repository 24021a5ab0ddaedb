package workload

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// SeqValue is the value of the writer's record seq for partition: the
// checker can tell a record's partition and place from it alone.
func SeqValue(partition int32, seq int) []byte {
	return []byte(strconv.Itoa(int(partition)) + ":" + strconv.Itoa(seq))
}

// ParseSeqValue reverses SeqValue.
func ParseSeqValue(v []byte) (partition int32, seq int, err error) {
	ps, ss, ok := strings.Cut(string(v), ":")
	if !ok {
		return 0, 0, fmt.Errorf("value %q: want partition:seq", v)
	}
	p, err := strconv.ParseInt(ps, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("value %q: partition: %w", v, err)
	}
	s, err := strconv.Atoi(ss)
	if err != nil {
		return 0, 0, fmt.Errorf("value %q: seq: %w", v, err)
	}
	return int32(p), s, nil
}

// Producer is an idempotent (franz-go's default) acks=all client that
// writes to the partition each record names and retries every 100 ms.
func Producer(t testing.TB, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
	return testutil.Client(t, bootstrap, append(append(base, ClientLog()...), opts...)...)
}

// ClientLog turns on franz-go's own log when $CLUSTER_KGO_LOG names a level
// (debug, info, warn, error), for chasing a client that stalls.
func ClientLog() []kgo.Opt {
	var level kgo.LogLevel
	switch os.Getenv("CLUSTER_KGO_LOG") {
	case "debug":
		level = kgo.LogLevelDebug
	case "info":
		level = kgo.LogLevelInfo
	case "warn":
		level = kgo.LogLevelWarn
	case "error":
		level = kgo.LogLevelError
	default:
		return nil
	}
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, nil))}
}

// Wait sleeps for d: the pacing of a workload, never a wait for a
// condition.
func Wait(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
}
