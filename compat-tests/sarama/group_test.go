package sarama_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// groupLog is what the members of a consumer group saw, shared by their
// handlers.
type groupLog struct {
	mu sync.Mutex
	// claims[generation][member] are the partitions member held then.
	claims map[int32]map[string][]int32
	// owner is the member that consumed each "partition/offset".
	owner map[string]string
}

func newGroupLog() *groupLog {
	return &groupLog{claims: map[int32]map[string][]int32{}, owner: map[string]string{}}
}

// split returns the newest generation's claims if len(members) members hold
// all of partitions between them, disjointly, each at least one.
func (g *groupLog) split(members, partitions int) (map[string][]int32, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	newest := int32(-1)
	for gen := range g.claims {
		newest = max(newest, gen)
	}
	claims := g.claims[newest]
	if len(claims) != members {
		return nil, false
	}
	var all []int32
	for _, ps := range claims {
		if len(ps) == 0 {
			return nil, false
		}
		all = append(all, ps...)
	}
	slices.Sort(all)
	if len(slices.Compact(all)) != partitions || len(all) != partitions {
		return nil, false
	}
	return claims, true
}

func (g *groupLog) consumed() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]string, len(g.owner))
	for k, v := range g.owner {
		out[k] = v
	}
	return out
}

// handler is one member's sarama.ConsumerGroupHandler.
type handler struct {
	name string
	log  *groupLog
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	gen := h.log.claims[s.GenerationID()]
	if gen == nil {
		gen = map[string][]int32{}
		h.log.claims[s.GenerationID()] = gen
	}
	for _, ps := range s.Claims() {
		gen[h.name] = append(gen[h.name], ps...)
	}
	if _, ok := gen[h.name]; !ok {
		gen[h.name] = nil
	}
	return nil
}

func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.log.mu.Lock()
		h.log.owner[fmt.Sprintf("%d/%d", m.Partition, m.Offset)] = h.name
		h.log.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

// member runs one consumer group member until stop is called, which also
// closes the group (committing marked offsets).
func member(t *testing.T, addr string, version sarama.KafkaVersion, group, topic string, h *handler) (stop func()) {
	t.Helper()
	cfg := newConfig(t, version)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cfg.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("NewConsumerGroup %s: %v", h.name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			// Consume returns at each rebalance; it is called again to rejoin.
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				t.Errorf("member %s: Consume: %v", h.name, err)
				return
			}
		}
	}()
	go func() {
		for err := range cg.Errors() {
			t.Errorf("member %s: %v", h.name, err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			if err := cg.Close(); err != nil {
				t.Errorf("member %s: Close: %v", h.name, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// produceEach writes n records to each partition, acks=all.
func produceEach(t *testing.T, addr string, version sarama.KafkaVersion, topic string, partitions int32, n int) {
	t.Helper()
	cfg := newConfig(t, version)
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer producer.Close()
	var msgs []*sarama.ProducerMessage
	for p := range partitions {
		for i := range n {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: p,
				Value: sarama.StringEncoder(fmt.Sprintf("%d-%d", p, i))})
		}
	}
	if err := producer.SendMessages(msgs); err != nil {
		t.Fatalf("SendMessages: %v", err)
	}
}

func testConsumerGroup(t *testing.T, addr string, version sarama.KafkaVersion) {
	const topic, group, partitions, perPartition = "sarama-group", "sarama-g", 6, 10
	admin := newAdmin(t, addr, version)
	createTopic(t, admin, topic, partitions)

	log := newGroupLog()
	stopA := member(t, addr, version, group, topic, &handler{name: "a", log: log})
	stopB := member(t, addr, version, group, topic, &handler{name: "b", log: log})
	var claims map[string][]int32
	eventually(t, 60*time.Second, func() error {
		var ok bool
		if claims, ok = log.split(2, partitions); !ok {
			return fmt.Errorf("the two members never split the %d partitions; claims by generation: %v", partitions, log.claims)
		}
		return nil
	})
	t.Logf("claims: %v", claims)
	owner := map[int32]string{}
	for m, ps := range claims {
		for _, p := range ps {
			owner[p] = m
		}
	}

	produceEach(t, addr, version, topic, partitions, perPartition)
	eventually(t, 30*time.Second, func() error {
		if got := len(log.consumed()); got < partitions*perPartition {
			return fmt.Errorf("group consumed %d of %d records", got, partitions*perPartition)
		}
		return nil
	})
	for key, m := range log.consumed() {
		var p, off int
		fmt.Sscanf(key, "%d/%d", &p, &off)
		if owner[int32(p)] != m {
			t.Errorf("record %s consumed by member %s, but partition %d was %s's", key, m, p, owner[int32(p)])
		}
	}
	stopA()
	stopB()

	// Closing committed what each member marked.
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2, 3, 4, 5}})
	if err != nil {
		t.Fatalf("ListConsumerGroupOffsets: %v", err)
	}
	for p := range int32(partitions) {
		b := resp.GetBlock(topic, p)
		if b == nil || b.Err != sarama.ErrNoError || b.Offset != perPartition {
			t.Errorf("committed offset of partition %d: %+v, want %d", p, b, perPartition)
		}
	}

	// A new member of the group starts from the commits: it reads only the
	// records produced after them.
	produceEach(t, addr, version, topic, partitions, 1)
	again := newGroupLog()
	member(t, addr, version, group, topic, &handler{name: "c", log: again})
	eventually(t, 60*time.Second, func() error {
		if got := len(again.consumed()); got < partitions {
			return fmt.Errorf("rejoined group consumed %d of %d new records", got, partitions)
		}
		return nil
	})
	for key := range again.consumed() {
		var p, off int
		fmt.Sscanf(key, "%d/%d", &p, &off)
		if off != perPartition {
			t.Errorf("rejoined group consumed %s: want only offset %d of each partition", key, perPartition)
		}
	}
}
