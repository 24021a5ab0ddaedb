package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// startChurnGroup starts a broker, a topic of partitions and a producer
// writing to it until the test ends or stop is called.
func startChurnGroup(t *testing.T, topic string, partitions int32, overrides map[string]string) (*testBroker, *groupRun, func()) {
	t.Helper()
	tb := startBroker(t, overrides)
	r := newGroupRun(topic, topic+"-group", partitions)
	tb.createTopic(r.topic, r.partitions, nil)
	stop := r.startProducer(t, tb)
	return tb, r, stop
}

// TestGroupRebalanceTimeoutRemovesStuckMember holds one member inside its
// poll (kgo blocks rebalances meanwhile, so it cannot rejoin) while another
// joins: the rebalance completes without the stuck member once the
// rebalance timeout passes (its session timeout is far longer), and the stuck
// member comes back as a new member once released.
func TestGroupRebalanceTimeoutRemovesStuckMember(t *testing.T) {
	tb, r, stop := startChurnGroup(t, "stuck", 6, map[string]string{"group.min.session.timeout.ms": "1000"})
	adm := tb.admin()
	slow := []kgo.Opt{kgo.SessionTimeout(30 * time.Second), kgo.RebalanceTimeout(2 * time.Second)}
	a := r.startMember(t, tb, "a", kgo.RangeBalancer(), slow...)
	r.checkDescribed(t, waitGroup(t, adm, r.group, "settled with a", r.settled(a)))
	r.waitProgress(t, 50)
	stuckID := a.memberID()

	a.stall.Store(true)
	<-a.stalled
	b := r.startMember(t, tb, "b", kgo.RangeBalancer(), slow...)
	r.checkDescribed(t, waitGroup(t, adm, r.group, "settled with b alone", r.settled(b)))
	r.waitProgress(t, 100)

	close(a.release)
	r.checkDescribed(t, waitGroup(t, adm, r.group, "settled with a back", r.settled(a, b)))
	if a.memberID() == stuckID {
		t.Fatalf("the stuck member kept its member id %s after being removed", stuckID)
	}
	r.waitProgress(t, 50)
	stop()
	r.finish(t, adm)
}

// TestGroupStaticMemberRestart restarts a static member (group.instance.id)
// within its session timeout: it gets its partitions back in the same
// generation, without a rebalance, and nothing is consumed twice.
func TestGroupStaticMemberRestart(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, r, stop := startChurnGroup(t, "static", 6, nil)
			adm := tb.admin()
			static := func(id string) []kgo.Opt {
				return []kgo.Opt{kgo.InstanceID(id), kgo.SessionTimeout(20 * time.Second)}
			}
			// a joins first and stays the leader; b, a follower, restarts.
			// (A restarted leader recomputes the plan and may rejoin on
			// purpose when its balancer's answer differs, KIP-814.)
			a := r.startMember(t, tb, "a", tc.balancer, static("instance-a")...)
			r.checkDescribed(t, waitGroup(t, adm, r.group, "settled with a", r.settled(a)))
			b := r.startMember(t, tb, "b", tc.balancer, static("instance-b")...)
			r.checkDescribed(t, waitGroup(t, adm, r.group, "settled with a and b", r.settled(a, b)))
			r.waitProgress(t, 100)
			_, gen := a.cl.GroupMetadata()
			r.mu.Lock()
			before := append([]int32(nil), r.generations[gen]["b"]...)
			r.successorOf["b2"] = "b"
			r.mu.Unlock()

			b.leave() // a static member's Close does not leave the group
			b2 := r.startMember(t, tb, "b2", tc.balancer, static("instance-b")...)
			r.checkDescribed(t, waitGroup(t, adm, r.group, "settled with b's successor", r.settled(a, b2)))
			r.waitProgress(t, 100)
			stop()
			r.finish(t, adm)

			r.mu.Lock()
			defer r.mu.Unlock()
			if _, gen2 := b2.cl.GroupMetadata(); gen2 != gen {
				t.Fatalf("the restarted static member is in generation %d, want %d (no rebalance)", gen2, gen)
			}
			for g := range r.generations {
				if g > gen {
					t.Fatalf("generation %d after the static restart; the group stayed in %d", g, gen)
				}
			}
			after := r.generations[gen]["b"]
			if len(before) == 0 || !slicesEqual(before, after) {
				t.Fatalf("static member's partitions: %v before the restart, %v after", before, after)
			}
		})
	}
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestGroupPicksUpNewPartitions grows the topic under a running group: the
// leader notices the new partitions in its metadata and rejoins, which
// rebalances a Stable group, and the new partitions are consumed too.
func TestGroupPicksUpNewPartitions(t *testing.T) {
	tb, r, stop := startChurnGroup(t, "growing", 3, map[string]string{"group.min.session.timeout.ms": "1000"})
	adm := tb.admin()
	fast := []kgo.Opt{kgo.MetadataMinAge(100 * time.Millisecond), kgo.MetadataMaxAge(300 * time.Millisecond)}
	a := r.startMember(t, tb, "a", kgo.CooperativeStickyBalancer(), fast...)
	r.checkDescribed(t, waitGroup(t, adm, r.group, "settled with a", r.settled(a)))
	b := r.startMember(t, tb, "b", kgo.CooperativeStickyBalancer(), fast...)
	r.checkDescribed(t, waitGroup(t, adm, r.group, "settled with a and b", r.settled(a, b)))
	r.waitProgress(t, 50)

	resp, err := adm.CreatePartitions(testContext(t), 3, r.topic)
	if err == nil {
		err = resp[r.topic].Err
	}
	if err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	// A new producer, which knows the new partitions from its start.
	stop()
	r.mu.Lock()
	r.partitions = 6
	r.mu.Unlock()
	stop = r.startProducer(t, tb)
	r.checkDescribed(t, waitGroup(t, adm, r.group, "settled over 6 partitions", r.settled(a, b)))
	r.waitProgress(t, 100)
	stop()
	r.finish(t, adm)
}
