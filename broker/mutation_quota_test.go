package broker

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/quota"
)

// controller_mutation_rate of 1 partition/s with Kafka's 11 windows of
// 1 s: a bucket of 11 partitions, refilled to the full between rows by
// the injected clock; each row then spends it.
func TestControllerMutationQuota(t *testing.T) {
	clock := testutil.NewClock(time.UnixMilli(1_000_000_000))
	tb := startBrokerWith(t, nil, func(b *Broker) {
		b.mutationQuotas = quota.NewMutationManager(quota.Config{Now: clock.Now})
	})
	tb.createTopic("p1", 1, nil)
	tb.createTopic("p2", 1, nil)
	tb.createTopic("p3", 1, nil)
	set := kmsg.NewPtrAlterClientQuotasRequest()
	// rawRoundTrip's client id.
	set.Entries = append(set.Entries, alterQuotaEntry(map[string]*string{"client-id": kmsg.StringPtr("test")}, quotaOp("controller_mutation_rate", 1, false)))
	if resp := tb.roundTrip(set).(*kmsg.AlterClientQuotasResponse); resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("set quota: %+v", resp.Entries[0])
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if !tb.b.mutationQuotas.Enabled() {
			return errors.New("controller_mutation_rate not loaded")
		}
		return nil
	})

	type topic struct {
		name string
		n    int32 // partitions to create, or the new total
	}
	create := func(version int16, validateOnly bool, ts ...topic) kmsg.Request {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.ValidateOnly, req.TimeoutMillis = version, validateOnly, 30000
		for _, x := range ts {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = x.name, x.n, 1
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	addPartitions := func(version int16, ts ...topic) kmsg.Request {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis = version, 30000
		for _, x := range ts {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = x.name, x.n
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	del := func(version int16, names ...string) kmsg.Request {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis = version, 30000
		req.TopicNames = names
		for _, n := range names {
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, dt)
		}
		return req
	}
	throttled := kerr.ThrottlingQuotaExceeded.Code
	for _, tc := range []struct {
		name     string
		refill   bool
		req      kmsg.Request
		codes    []int16
		throttle int32
	}{
		// 8 then 8 more: the second exceeds the quota but is let
		// through, since the quota was not exceeded yet; the third is
		// refused, with the time to refill 5 tokens.
		{"create strict", true, create(6, false, topic{"a", 8}, topic{"b", 8}, topic{"c", 1}), []int16{0, 0, throttled}, 5000},
		// Before v6 nothing is refused; the client is told to back off.
		{"create permissive", true, create(5, false, topic{"a2", 8}, topic{"b2", 8}, topic{"c2", 1}), []int16{0, 0, 0}, 6000},
		// Validation mutates nothing and spends nothing...
		{"create validate only", true, create(7, true, topic{"v", 50}), []int16{0}, 0},
		// ... so the full bucket is still there; going to -1 is no throttle
		// for a strict quota.
		{"create after validate only", false, create(7, false, topic{"x", 11}, topic{"y", 1}), []int16{0, 0}, 0},
		{"add partitions strict", true, addPartitions(3, topic{"p1", 12}, topic{"p2", 3}, topic{"p3", 2}), []int16{0, 0, throttled}, 2000},
		{"add partitions permissive", true, addPartitions(2, topic{"p1", 24}, topic{"p2", 4}), []int16{0, 0}, 2000},
		{"delete strict", true, del(5, "a", "b", "a2"), []int16{0, 0, throttled}, 5000},
		{"delete permissive", true, del(4, "a2", "b2"), []int16{0, 0}, 5000},
	} {
		if tc.refill {
			clock.Advance(time.Hour)
		}
		var codes []int16
		var throttle int32
		switch resp := tb.roundTrip(tc.req).(type) {
		case *kmsg.CreateTopicsResponse:
			throttle = resp.ThrottleMillis
			for _, rt := range resp.Topics {
				codes = append(codes, rt.ErrorCode)
				if rt.ErrorCode == throttled && (rt.ErrorMessage == nil || *rt.ErrorMessage != "The throttling quota has been exceeded.") {
					t.Errorf("%s: %s: message %v", tc.name, rt.Topic, rt.ErrorMessage)
				}
			}
		case *kmsg.CreatePartitionsResponse:
			throttle = resp.ThrottleMillis
			for _, rt := range resp.Topics {
				codes = append(codes, rt.ErrorCode)
			}
		case *kmsg.DeleteTopicsResponse:
			throttle = resp.ThrottleMillis
			for _, rt := range resp.Topics {
				codes = append(codes, rt.ErrorCode)
			}
		}
		if !slices.Equal(codes, tc.codes) || throttle != tc.throttle {
			t.Errorf("%s: codes %v throttle %d ms, want %v and %d ms", tc.name, codes, throttle, tc.codes, tc.throttle)
		}
	}
	// What was refused or only validated did not happen, and what was
	// let through did: the topics and partition counts left behind.
	want := map[string]int{"p1": 24, "p2": 4, "p3": 1, "c2": 1, "x": 11, "y": 1}
	testutil.Eventually(t, 30*time.Second, func() error {
		topics, err := tb.admin().ListTopics(testContext(t))
		if err != nil {
			return err
		}
		got := map[string]int{}
		for name, d := range topics {
			got[name] = len(d.Partitions)
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("topics %v, want %v", got, want)
		}
		return nil
	})
}
