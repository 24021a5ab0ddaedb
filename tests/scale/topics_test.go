package scale

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// perTopic is how many partitions one benchmark topic has: a topic's
// assignment is one znode, and ZooKeeper's jute.maxbuffer (1 MiB) bounds
// it, so tens of thousands of partitions are spread over topics, as a
// real cluster's are.
const perTopic = 1000

// topicNames names the topics that hold n partitions, perTopic each (the
// last one the rest).
func topicSizes(n int) map[string]int32 {
	out := map[string]int32{}
	for i := 0; n > 0; i++ {
		p := min(n, perTopic)
		out[fmt.Sprintf("scale-%03d", i)] = int32(p)
		n -= p
	}
	return out
}

// createTopics creates the topics of topicSizes(n) with replication rf and
// configs, a few per request.
func createTopics(b testing.TB, cl *kgo.Client, n, rf int, configs map[string]string) {
	b.Helper()
	sizes := topicSizes(n)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 120_000
	flush := func() {
		if len(req.Topics) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			b.Fatalf("CreateTopics: %v", err)
		}
		for _, t := range resp.Topics {
			// REQUEST_TIMED_OUT: the topic was created and its
			// partitions are still being led (Kafka's answer too); the
			// benchmark's waits that follow see them through.
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) && !errors.Is(err, kerr.RequestTimedOut) {
				b.Fatalf("CreateTopics %s: %v", t.Topic, err)
			}
		}
		req.Topics = req.Topics[:0]
	}
	for name, p := range sizes {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, p, int16(rf)
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
		if len(req.Topics) == 5 {
			flush()
		}
	}
	flush()
}

// metadata asks broker (via cl, pinned to it) for every topic.
func metadata(ctx context.Context, cl *kgo.Client, broker int32) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil // all
	resp, err := cl.Broker(int(broker)).RetriableRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// state is what a poll of Metadata found: partitions of the benchmark
// topics, how many have a live leader, and how many a full ISR.
type state struct {
	partitions, led, fullISR int
	controller               int32
}

func (s state) String() string {
	return fmt.Sprintf("%d partitions, %d led, %d with a full ISR, controller %d", s.partitions, s.led, s.fullISR, s.controller)
}

// survey reads one Metadata answer: a partition is led when its leader is
// set and is not dead (-1: none dead), and its ISR full when it holds
// every replica.
func survey(resp *kmsg.MetadataResponse, dead int32) state {
	s := state{controller: resp.ControllerID}
	for _, t := range resp.Topics {
		if t.Topic == nil || !strings.HasPrefix(*t.Topic, "scale-") {
			continue
		}
		for _, p := range t.Partitions {
			s.partitions++
			if p.ErrorCode == 0 && p.Leader >= 0 && p.Leader != dead {
				s.led++
			}
			if len(p.ISR) == len(p.Replicas) && p.ErrorCode == 0 {
				s.fullISR++
			}
		}
	}
	return s
}

// waitFor polls broker's Metadata every interval until done(state) holds,
// and returns when it first did (or fails after timeout).
func waitFor(b testing.TB, cl *kgo.Client, broker int32, dead int32, timeout time.Duration, done func(state) bool) (time.Time, state) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	var last state
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := metadata(ctx, cl, broker)
		cancel()
		if err == nil {
			last, lastErr = survey(resp, dead), nil
			if done(last) {
				return time.Now(), last
			}
		} else {
			lastErr = err
		}
		time.Sleep(100 * time.Millisecond) // a poll interval, not a wait for a condition
	}
	b.Fatalf("after %v: %v (last error %v)", timeout, last, lastErr)
	return time.Time{}, last
}

// hosted counts the replicas of the benchmark topics broker has a log for
// (DescribeLogDirs), as opposed to Metadata, which tells the controller's
// decisions before the brokers applied them.
func hosted(cl *kgo.Client, broker int32) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	r, err := cl.Broker(int(broker)).Request(ctx, req)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range r.(*kmsg.DescribeLogDirsResponse).Dirs {
		for _, t := range d.Topics {
			if strings.HasPrefix(t.Topic, "scale-") {
				n += len(t.Partitions)
			}
		}
	}
	return n, nil
}

// waitHosted polls until the brokers together host want replicas.
func waitHosted(b testing.TB, cl *kgo.Client, brokers []int32, want int, timeout time.Duration) time.Time {
	b.Helper()
	deadline := time.Now().Add(timeout)
	var got int
	var lastErr error
	for time.Now().Before(deadline) {
		got, lastErr = 0, nil
		for _, id := range brokers {
			n, err := hosted(cl, id)
			if err != nil {
				lastErr = err
			}
			got += n
		}
		if got == want && lastErr == nil {
			return time.Now()
		}
		time.Sleep(500 * time.Millisecond) // a poll interval
	}
	b.Fatalf("after %v the brokers host %d of %d replicas (last error %v)", timeout, got, want, lastErr)
	return time.Time{}
}
