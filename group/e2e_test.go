package group

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// miniBroker is just enough of a Kafka broker for franz-go's group consumer
// and admin client to talk to the coordinator over TCP: one node, topic
// "t" with two empty partitions, and the group APIs served by Coordinator.
// It exists to check wire-level interplay (version negotiation, blocking
// joins, rebalances) with a real client; the broker package does this for
// real.
type miniBroker struct {
	t    *testing.T
	c    *Coordinator
	ln   net.Listener
	host string
	port int32
	wg   sync.WaitGroup
	ctx  context.Context
}

// served lists the API keys the mini broker answers, capped where higher
// versions address topics by id.
var served = map[int16]int16{
	0:  -1, // Produce: not served
	1:  12, // Fetch
	2:  7,  // ListOffsets
	3:  12, // Metadata
	8:  9,  // OffsetCommit
	9:  9,  // OffsetFetch
	10: -1, 11: -1, 12: -1, 13: -1, 14: -1, 15: -1, 16: -1, 18: -1, 42: -1, 47: -1,
}

func newMiniBroker(t *testing.T, c *Coordinator) *miniBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := ln.Addr().(*net.TCPAddr)
	b := &miniBroker{t: t, c: c, ln: ln, host: addr.IP.String(), port: int32(addr.Port), ctx: ctx}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(func() {
		cancel()
		ln.Close()
		b.wg.Wait()
	})
	return b
}

func (b *miniBroker) addr() string { return net.JoinHostPort(b.host, strconv.Itoa(int(b.port))) }

func (b *miniBroker) accept() {
	defer b.wg.Done()
	for {
		conn, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer conn.Close()
			go func() { <-b.ctx.Done(); conn.Close() }()
			b.serve(conn)
		}()
	}
}

// serve handles one connection's requests strictly in order, as Kafka does.
func (b *miniBroker) serve(conn net.Conn) {
	r := bufio.NewReader(conn)
	for {
		var size int32
		if err := binary.Read(r, binary.BigEndian, &size); err != nil {
			return
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		key := int16(binary.BigEndian.Uint16(buf))
		version := int16(binary.BigEndian.Uint16(buf[2:]))
		corr := buf[4:8]
		clientLen := int16(binary.BigEndian.Uint16(buf[8:]))
		body := buf[10:]
		clientID := ""
		if clientLen > 0 {
			clientID, body = string(body[:clientLen]), body[clientLen:]
		}
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		req.SetVersion(version)
		if req.IsFlexible() {
			var err error
			if body, err = skipTags(body); err != nil {
				return
			}
		}
		if err := req.ReadFrom(body); err != nil {
			b.t.Logf("decode %s v%d: %v", kmsg.NameForKey(key), version, err)
			return
		}
		ctx := WithClientInfo(b.ctx, clientID, "/127.0.0.1")
		resp := b.handle(ctx, req)
		if resp == nil {
			return
		}
		out := append([]byte{0, 0, 0, 0}, corr...)
		if resp.IsFlexible() && key != 18 {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for i := uint64(0); i < n; i++ {
		_, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, errors.New("bad tag length")
		}
		b = b[k+int(l):]
	}
	return b, nil
}

func (b *miniBroker) handle(ctx context.Context, req kmsg.Request) kmsg.Response {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		for key, maxV := range served {
			k := kmsg.RequestForKey(key)
			if maxV < 0 {
				maxV = k.MaxVersion()
			}
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: key, MaxVersion: min(maxV, k.MaxVersion())})
		}
		return resp
	case *kmsg.MetadataRequest:
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: b.host, Port: b.port}}
		resp.ControllerID = 0
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic = strPtr("t")
		topic.TopicID = [16]byte{1}
		for p := int32(0); p < 2; p++ {
			topic.Partitions = append(topic.Partitions, kmsg.MetadataResponseTopicPartition{Partition: p, Leader: 0, LeaderEpoch: -1, Replicas: []int32{0}, ISR: []int32{0}})
		}
		resp.Topics = []kmsg.MetadataResponseTopic{topic}
		return resp
	case *kmsg.FindCoordinatorRequest:
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.NodeID, resp.Host, resp.Port = 0, b.host, b.port
		for _, k := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, kmsg.FindCoordinatorResponseCoordinator{Key: k, NodeID: 0, Host: b.host, Port: b.port})
		}
		return resp
	case *kmsg.ListOffsetsRequest:
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.Offset, rp.Timestamp, rp.LeaderEpoch = p.Partition, 0, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.FetchRequest:
		// Empty partitions: answer after a short wait, as a long poll would.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(time.Duration(req.MaxWaitMillis)*time.Millisecond, 50*time.Millisecond)):
		}
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition = p.Partition
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.JoinGroupRequest:
		return b.c.JoinGroup(ctx, req)
	case *kmsg.SyncGroupRequest:
		return b.c.SyncGroup(ctx, req)
	case *kmsg.HeartbeatRequest:
		return b.c.Heartbeat(ctx, req)
	case *kmsg.LeaveGroupRequest:
		return b.c.LeaveGroup(ctx, req)
	case *kmsg.OffsetCommitRequest:
		return b.c.OffsetCommit(ctx, req)
	case *kmsg.OffsetFetchRequest:
		return b.c.OffsetFetch(ctx, req)
	case *kmsg.DescribeGroupsRequest:
		return b.c.DescribeGroups(ctx, req)
	case *kmsg.ListGroupsRequest:
		return b.c.ListGroups(ctx, req)
	case *kmsg.DeleteGroupsRequest:
		return b.c.DeleteGroups(ctx, req)
	case *kmsg.OffsetDeleteRequest:
		return b.c.OffsetDelete(ctx, req)
	}
	return nil
}

func newE2E(t *testing.T) (*miniBroker, *kadm.Client) {
	t.Helper()
	c := New(Config{NumPartitions: 3, MinSessionTimeout: time.Second})
	t.Cleanup(c.Close)
	for p := int32(0); p < 3; p++ {
		c.OnElected(p, 0, &memPartition{})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	b := newMiniBroker(t, c)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return b, kadm.NewClient(cl)
}

// assignedConsumer is a franz-go group consumer that reports how many
// partitions it owns.
type assignedConsumer struct {
	cl    *kgo.Client
	mu    sync.Mutex
	owned map[int32]bool
}

func (a *assignedConsumer) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.owned)
}

func newConsumer(t *testing.T, b *miniBroker, group string, extra ...kgo.Opt) *assignedConsumer {
	t.Helper()
	a := &assignedConsumer{owned: map[int32]bool{}}
	opts := []kgo.Opt{
		kgo.SeedBrokers(b.addr()),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics("t"),
		kgo.SessionTimeout(3 * time.Second),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.FetchMaxWait(50 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, p := range m["t"] {
				a.owned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, p := range m["t"] {
				delete(a.owned, p)
			}
		}),
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	a.cl = cl
	// Polling drives the group; the fetches themselves return nothing.
	go func() {
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
		}
	}()
	return a
}

func TestFranzGoGroupConsumers(t *testing.T) {
	b, adm := newE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	c1 := newConsumer(t, b, "cg")
	waitFor(t, func() bool { return c1.count() == 2 })
	c2 := newConsumer(t, b, "cg")
	waitFor(t, func() bool { return c1.count() == 1 && c2.count() == 1 })

	described, err := adm.DescribeGroups(ctx, "cg")
	if err != nil {
		t.Fatal(err)
	}
	dg := described["cg"]
	if dg.Err != nil || dg.State != "Stable" || len(dg.Members) != 2 || dg.Protocol != "cooperative-sticky" {
		t.Fatalf("describe: err %v state %s members %d protocol %s", dg.Err, dg.State, len(dg.Members), dg.Protocol)
	}

	// Commits by the members, through the consumers' own generation.
	if err := c1.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 0, LeaderEpoch: -1, Metadata: "from-admin"})
	// A non-member may not commit to a group with members.
	if resp, err := adm.CommitOffsets(ctx, "cg", offsets); err != nil || !errors.Is(resp.Error(), kerr.UnknownMemberID) {
		t.Fatalf("admin commit to a live group: %v %v", err, resp.Error())
	}

	c2.cl.Close() // leaves the group
	waitFor(t, func() bool { return c1.count() == 2 })
	c1.cl.Close()
	waitFor(t, func() bool {
		lg, err := adm.ListGroups(ctx)
		return err == nil && len(lg) == 1 && lg["cg"].State == "Empty"
	})

	// Once empty, a simple commit with metadata round-trips.
	resp, err := adm.CommitOffsets(ctx, "cg", offsets)
	if err != nil || resp.Error() != nil {
		t.Fatalf("admin commit: %v %v", err, resp.Error())
	}
	fetched, err := adm.FetchOffsets(ctx, "cg")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("t", 0); !ok || o.At != 0 || o.Metadata != "from-admin" {
		t.Fatalf("fetched %+v %v", o, ok)
	}
	deleted, err := adm.DeleteGroups(ctx, "cg")
	if err != nil || deleted.Error() != nil {
		t.Fatalf("delete: %v %v", err, deleted.Error())
	}
	lg, err := adm.ListGroups(ctx)
	if err != nil || len(lg) != 0 {
		t.Fatalf("groups after delete: %v %v", lg, err)
	}
}

func TestFranzGoStaticMemberRestart(t *testing.T) {
	b, adm := newE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	generation := func() int32 {
		d, err := adm.DescribeGroups(ctx, "sg")
		if err != nil || len(d["sg"].Members) == 0 {
			return -1
		}
		// DescribeGroups has no generation; OffsetFetch neither. Use the
		// coordinator's state directly.
		var gen int32 = -1
		b.c.step("sg", func(s *shard, _ time.Time, _ *effects) {
			if g := s.groups["sg"]; g != nil {
				gen = g.generation
			}
		})
		return gen
	}

	c1 := newConsumer(t, b, "sg", kgo.InstanceID("i-1"))
	waitFor(t, func() bool { return c1.count() == 2 })
	c2 := newConsumer(t, b, "sg", kgo.InstanceID("i-2"))
	waitFor(t, func() bool { return c1.count() == 1 && c2.count() == 1 })
	before := generation()

	// A static member's Close does not leave the group (KIP-345); a
	// restart with the same instance id gets its partition back without a
	// rebalance.
	c2.cl.Close()
	c3 := newConsumer(t, b, "sg", kgo.InstanceID("i-2"))
	waitFor(t, func() bool { return c3.count() == 1 })
	if after := generation(); after != before {
		t.Fatalf("generation %d -> %d: the restart rebalanced", before, after)
	}
	if c1.count() != 1 {
		t.Fatalf("the other member owns %d partitions", c1.count())
	}
	c1.cl.Close()
	c3.cl.Close()
}
