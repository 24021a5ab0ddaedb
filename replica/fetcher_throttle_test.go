package replica

import (
	"testing"

	"github.com/brook-mq/brook/log"
)

// TestFollowerThrottle: the follower leaves a throttled partition out of
// its fetch while out of sync and over the quota, as Kafka's
// shouldFollowerThrottle, and the topic's throttle lists reach the quota
// through UpdateConfig.
func TestFollowerThrottle(t *testing.T) {
	f := newFixtureAs(t, 2, &fakeCluster{}, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}})
	q := f.m.FollowerQuota()
	f.m.cfg.ThrottledReplicas = func(topic string) (leader, follower []string) {
		return []string{"0:1"}, []string{"0:2"}
	}
	f.m.UpdateConfig(testTopic)
	if !q.IsThrottled(testTopic, 0) || f.m.LeaderQuota().IsThrottled(testTopic, 0) {
		t.Fatalf("throttled: follower side %v, leader side %v; want only the follower's", q.IsThrottled(testTopic, 0), f.m.LeaderQuota().IsThrottled(testTopic, 0))
	}
	fe := f.m.fetchers[1]
	fp := fe.parts[log.TopicPartition{Topic: testTopic, Partition: 0}]
	fp.Truncate = false
	fetches := func() bool {
		req, _, _ := fe.buildFetch()
		return req != nil
	}
	if !fetches() {
		t.Fatal("no fetch under an unlimited quota")
	}
	q.SetRate(1024)
	q.Record(1 << 20)
	req, _, next := fe.buildFetch()
	if req != nil {
		t.Fatal("throttled out-of-sync partition fetched over the quota")
	}
	if want := f.clock.Now().Add(f.m.cfg.FetchBackoff); !next.Equal(want) {
		t.Fatalf("next look at %v, want %v (replica.fetch.backoff.ms)", next, want)
	}
	fp.InSync = true
	if !fetches() {
		t.Fatal("in-sync partition held back")
	}
	fp.InSync = false
	f.m.cfg.ThrottledReplicas = func(string) (leader, follower []string) { return nil, nil }
	f.m.UpdateConfig(testTopic)
	if !fetches() {
		t.Fatal("partition held back after its throttle was removed")
	}
}
