package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestAcksAllAcrossLeaderChange produces with acks=all while leadership
// moves away (controlled shutdown of the leader) and back (ElectLeaders of
// the preferred replica, in a later term on the same broker): every
// acknowledged record must be there, in order, afterwards. Run it with
// -race: the acks=all wait reads the HW and the leadership term while
// LeaderAndISR changes both. It does not pin the window in which an older
// WaitForCommit read a later term's HW after its term check (the log's own
// lock kept that read race-free, so -race cannot see it either); replica's
// TestWaitForCommitAcrossLeaderChange does.
func TestAcksAllAcrossLeaderChange(t *testing.T) {
	c := startReplCluster(t)
	ctx := testContext(t)
	const topic = "acks-all-moves"
	adm := kadm.NewClient(c.client())
	minISR := "2"
	all := []int32{1, 2, 3}
	leader := c.createReplicated(ctx, adm, topic, map[string]*string{"min.insync.replicas": &minISR})

	producer := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(50))
	stop := make(chan struct{})
	type result struct {
		acked []string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- r
				return
			default:
			}
			v := fmt.Sprintf("v-%d", i)
			if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
				r.err = fmt.Errorf("produce %s: %w", v, err)
				done <- r
				return
			}
			r.acked = append(r.acked, v)
		}
	}()
	// ackedAtLeast waits until the current leader's HW reaches n.
	ackedAtLeast := func(n int) {
		t.Helper()
		testutil.Eventually(t, 60*time.Second, func() error {
			hw := c.brokers[leader].b.replicas.Get(topic, 0).HighWatermark()
			if hw < int64(n) {
				return fmt.Errorf("HW %d, want %d", hw, n)
			}
			return nil
		})
	}
	ackedAtLeast(20)
	// Leadership moves away: the leader stops with a controlled shutdown.
	c.brokers[leader].stop()
	rest := slices.DeleteFunc(slices.Clone(all), func(id int32) bool { return id == leader })
	moved := c.waitISR(ctx, adm, topic, rest)
	if moved == leader {
		t.Fatalf("leader still %d", moved)
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		if hw := c.brokers[moved].b.replicas.Get(topic, 0).HighWatermark(); hw < 40 {
			return fmt.Errorf("new leader's HW %d", hw)
		}
		return nil
	})

	// It returns and, back in the ISR, takes leadership again in a later
	// term by preferred election.
	c.brokers[leader].start()
	c.waitISR(ctx, adm, topic, all)
	testutil.Eventually(t, 60*time.Second, func() error {
		// Errors (ELECTION_NOT_NEEDED once done) show in the leader check.
		if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); err != nil {
			return err
		}
		l, _, err := c.partitionMeta(ctx, adm, topic)
		if err != nil {
			return err
		}
		if l != leader {
			return fmt.Errorf("leader %d, want the preferred %d", l, leader)
		}
		return nil
	})
	base := c.brokers[leader].b.replicas.Get(topic, 0).HighWatermark()
	ackedAtLeast(int(base) + 20)

	close(stop)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	got := consumeReplicated(ctx, t, c, topic, len(r.acked))
	// An idempotent producer retrying across the moves writes each record
	// once and in order.
	if !slices.Equal(got[:len(r.acked)], r.acked) {
		t.Fatalf("consumed %d records, not the %d acknowledged in order", len(got), len(r.acked))
	}
	testutil.Eventually(t, 30*time.Second, func() error { return c.replicasIdentical(topic, all...) })
}
