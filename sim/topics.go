package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
)

// Topic creation and deletion while producing. An admin creates the topic
// "churn" (one partition, a replica on every broker, the first one drawn
// at random) with the real controller.CreateTopics, a producer writes to
// it, and after a while the admin deletes it as kafka-topics does
// (/admin/delete_topics/churn), waits for the deletion to finish and
// creates it again, with a new topic id, maybe with the same first
// replica. The controller's side is the real
// decisions (ClusterState.OnAssignmentChange and OnNewPartitions for a
// new topic, OnTopicDeletion, OnTopicDeleted) with the driver doing what
// controller/deletion.go and reloadTopics do around them: StopReplica
// (delete) to every replica through the broker channels, the topic's
// znodes removed once every replica answered, a deletion that waits for
// a replica that is down retried when brokers change. The broker's side
// is the real replica.Manager.ApplyStopReplica, which deletes the log.
// Its followers fetch it as they fetch the main topic (replication.go),
// by topic id, so a follower still holding an old incarnation is told
// UNKNOWN_TOPIC_ID by a leader of the new one.
//
// Invariants: a read of the topic from a broker that believes it leads it
// returns only records produced to the incarnation (topic id) that broker
// hosts, so a re-created topic never serves the old one's data; after the
// quiet phase no deletion is pending, and only the current incarnation's
// replica has a log of the topic, with the current topic id.

const churnTopic = "churn"

type topicWorkload struct {
	c *Cluster
	// gen is the incarnation being produced to (0: none yet); ids maps
	// each incarnation's topic id to its number.
	gen     int
	ids     map[[16]byte]int
	n       int
	created int
	deleted int
	reads   int
}

func newTopicWorkload(c *Cluster) *topicWorkload {
	return &topicWorkload{c: c, ids: map[[16]byte]int{}}
}

func (w *topicWorkload) schedule() {
	w.c.sched.After(w.c.sched.Between(time.Second, 3*time.Second), "churn: create", w.create)
	var produce func()
	produce = func() {
		if w.stopping() {
			return
		}
		w.produce()
		w.c.sched.After(w.c.sched.Between(50*time.Millisecond, 150*time.Millisecond), "~churn produce", produce)
	}
	w.c.sched.After(time.Second, "~churn produce", produce)
	var read func()
	read = func() {
		w.read()
		w.c.sched.After(w.c.sched.Between(200*time.Millisecond, 500*time.Millisecond), "~churn read", read)
	}
	w.c.sched.After(time.Second, "~churn read", read)
}

func (w *topicWorkload) stopping() bool {
	c := w.c
	return c.quiet && c.sched.Now().After(simStart.Add(c.cfg.Duration+c.cfg.Settle/2))
}

// create creates the next incarnation, then deletes it 1-4 s later.
func (w *topicWorkload) create() {
	c := w.c
	if c.quiet {
		return
	}
	// Every broker a replica, the preferred leader drawn at random.
	first := c.sched.Rand.Int31n(c.cfg.Brokers)
	var replicas []int32
	for i := range c.cfg.Brokers {
		replicas = append(replicas, (first+i)%c.cfg.Brokers+1)
	}
	res := controller.CreateTopics(context.Background(), c.admin, []controller.TopicSpec{{Name: churnTopic, NumPartitions: -1, ReplicationFactor: -1,
		Assignment: map[int32][]int32{0: replicas}}}, false)
	if res[0].ErrorCode != 0 {
		// The previous incarnation's znodes are not gone yet.
		c.sched.Tracef("churn: create: error %d: %s", res[0].ErrorCode, res[0].ErrorMessage)
		c.sched.After(200*time.Millisecond, "churn: create", w.create)
		return
	}
	w.gen++
	w.created++
	w.ids[res[0].TopicID] = w.gen
	c.sched.Tracef("churn: incarnation %d created on brokers %v", w.gen, replicas)
	c.sched.After(c.sched.Between(time.Second, 4*time.Second), "churn: delete", w.delete)
}

// delete marks the topic for deletion and creates it again once gone.
func (w *topicWorkload) delete() {
	c := w.c
	if c.quiet {
		return
	}
	if _, err := c.admin.Create(context.Background(), controller.DeleteTopicPath(churnTopic), nil, 0); err != nil && !errors.Is(err, store.ErrNodeExists) {
		c.fail("churn: mark for deletion: %v", err)
		return
	}
	w.deleted++
	c.sched.Tracef("churn: incarnation %d marked for deletion", w.gen)
	var wait func()
	wait = func() {
		if ok, _, err := c.admin.Exists(context.Background(), controller.TopicPath(churnTopic)); err == nil && !ok {
			// Not before a record sent to the old incarnation has
			// arrived: produce names topics, not topic ids, so such a
			// record would land in the new one (as in Kafka before
			// KIP-516's produce by topic id).
			c.sched.After(c.sched.Between(3*c.cfg.Net.MaxDelay, time.Second), "churn: create", w.create)
			return
		}
		c.sched.After(200*time.Millisecond, "~churn: deleted yet?", wait)
	}
	wait()
}

// churnLeaders are the brokers up that believe they lead churn-0.
func (c *Cluster) churnLeaders() []*Broker {
	var out []*Broker
	for _, b := range c.brokers {
		if b.up {
			if p := b.rm.Get(churnTopic, 0); p != nil && p.IsLeader() {
				out = append(out, b)
			}
		}
	}
	return out
}

// produce sends one record, labelled with the incarnation the producer's
// metadata knows, to a broker that believes it leads the topic.
func (w *topicWorkload) produce() {
	c := w.c
	leaders := c.churnLeaders()
	if len(leaders) == 0 || w.gen == 0 {
		return
	}
	b := leaders[c.sched.Rand.Intn(len(leaders))]
	inc := b.incarnation
	w.n++
	value := fmt.Sprintf("churn-%d-%d;", w.gen, w.n)
	c.net.Send(clientNode, b.id, "Produce (churn)", func() {
		if !b.live(inc) {
			return
		}
		p := b.rm.Get(churnTopic, 0)
		if p == nil {
			return
		}
		data, err := batch.Build(batch.BuildOptions{BaseTimestamp: c.sched.Now().UnixMilli()}, []batch.Record{{Value: []byte(value)}}, nil)
		if err != nil {
			c.fail("build batch: %v", err)
			return
		}
		_, _, _ = p.AppendAsLeaderInTerm(data, -1, 1) // acks=all, min.insync.replicas=1, not waited for
	})
}

// read reads the whole topic from a broker that believes it leads it and
// checks that every record belongs to the incarnation it hosts.
func (w *topicWorkload) read() {
	c := w.c
	leaders := c.churnLeaders()
	if len(leaders) == 0 {
		return
	}
	b := leaders[c.sched.Rand.Intn(len(leaders))]
	p := b.rm.Get(churnTopic, 0)
	gen, known := w.ids[p.TopicID()]
	values, err := readValues(p.Log(), p.HighWatermark())
	if err != nil {
		c.fail("broker %d: read %s-0: %v", b.id, churnTopic, err)
		return
	}
	w.reads++
	for _, off := range sortedKeys(values) {
		g, ok := churnGen(values[off])
		if !ok || !known || g != gen {
			c.fail("broker %d leads %s-0 of incarnation %d (known %v) and serves %q at offset %d", b.id, churnTopic, gen, known, values[off], off)
			return
		}
	}
}

// churnGen is the incarnation a churn record was produced to.
func churnGen(value string) (int, bool) {
	rest, ok := strings.CutPrefix(value, "churn-")
	if !ok {
		return 0, false
	}
	g, _, _ := strings.Cut(rest, "-")
	n, err := strconv.Atoi(g)
	return n, err == nil
}

// final: no deletion is pending, only the current incarnation's replicas
// hold a log of the topic, with its topic id, and they end where their
// leader's does.
func (w *topicWorkload) final() {
	c := w.c
	ctx := context.Background()
	if ok, _, err := c.admin.Exists(ctx, controller.DeleteTopicPath(churnTopic)); err != nil || ok {
		c.fail("churn: deletion of incarnation %d still pending after the quiet phase (err %v)", w.gen, err)
		return
	}
	a, err := controller.ReadTopic(ctx, c.admin, churnTopic)
	exists := err == nil
	if err != nil && !errors.Is(err, store.ErrNoNode) {
		c.fail("churn: read topic: %v", err)
		return
	}
	for _, b := range c.brokers {
		l := b.logs.Get(log.TopicPartition{Topic: churnTopic, Partition: 0})
		hosts := exists && slices.Contains(a.Partitions[0], b.id)
		switch {
		case l == nil && hosts:
			c.fail("churn: broker %d, a replica of incarnation %d, has no log", b.id, w.ids[a.TopicID])
			return
		case l != nil && !hosts:
			c.fail("churn: broker %d still has a log of %s-0 (incarnation %d, topic exists %v)", b.id, churnTopic, w.ids[l.TopicID()], exists)
			return
		case l != nil && l.TopicID() != a.TopicID:
			c.fail("churn: broker %d has a log of incarnation %d, the topic is incarnation %d", b.id, w.ids[l.TopicID()], w.ids[a.TopicID])
			return
		}
	}
	// The followers caught up in the quiet phase: every replica's log
	// ends where the leader's does.
	if leaders := c.churnLeaders(); exists && len(leaders) == 1 {
		lb := leaders[0]
		leo := lb.rm.Get(churnTopic, 0).Log().LogEndOffset()
		for _, b := range c.brokers {
			if l := b.logs.Get(log.TopicPartition{Topic: churnTopic, Partition: 0}); l != nil && l.LogEndOffset() != leo {
				c.fail("churn: broker %d's replica of incarnation %d ends at %d, its leader's (broker %d) at %d", b.id, w.ids[a.TopicID], l.LogEndOffset(), lb.id, leo)
				return
			}
		}
	}
}

// onStopReplica is the broker's StopReplica handler: an older controller
// epoch is refused (controllerFence), then the real ApplyStopReplica.
func (b *Broker) onStopReplica(req *kmsg.StopReplicaRequest) *kmsg.StopReplicaResponse {
	if req.ControllerEpoch < b.controllerEpoch {
		resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
		resp.ErrorCode = kerr.StaleControllerEpoch.Code
		return resp
	}
	b.controllerEpoch = req.ControllerEpoch
	if b.c.cfg.StopReplicaKeepsLogs {
		for i := range req.Topics {
			for j := range req.Topics[i].PartitionStates {
				req.Topics[i].PartitionStates[j].Delete = false
			}
		}
	}
	return b.rm.ApplyStopReplica(req)
}
