package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
)

// BenchmarkCreateTopic measures CreateTopics of a 50-partition topic until
// the controller has sent the LeaderAndISR for all of it, on a disk-backed
// embedded store (one broker).
func BenchmarkCreateTopic(b *testing.B) {
	db, err := store.Open(store.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	sess := db.NewSession()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := RegisterBroker(ctx, sess, plaintext(1)); err != nil {
		b.Fatal(err)
	}
	sent := make(chan int, 1024)
	c := New(Config{BrokerID: 1, DeleteTopicEnable: true}, sess, senderFunc(func(req kmsg.Request) {
		if r, ok := req.(*kmsg.LeaderAndISRRequest); ok && len(r.TopicStates) == 1 {
			sent <- len(r.TopicStates[0].PartitionStates)
		}
	}))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	b.ResetTimer()
	for i := range b.N {
		res := CreateTopics(ctx, sess, []TopicSpec{{Name: fmt.Sprintf("t%d", i), NumPartitions: 50, ReplicationFactor: 1}}, false)
		if res[0].ErrorCode != 0 {
			b.Fatalf("%+v", res)
		}
		if n := <-sent; n != 50 {
			b.Fatalf("LeaderAndISR with %d partitions", n)
		}
	}
}

type senderFunc func(kmsg.Request)

func (f senderFunc) Send(_ context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	f(req)
	return req.ResponseKind(), nil
}
