package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestElectLeadersSingleNode(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("elect", 2, nil)

	named := func(version int16, electionType int8, partitions ...int32) *kmsg.ElectLeadersResponse {
		t.Helper()
		req := kmsg.NewPtrElectLeadersRequest()
		req.SetVersion(version)
		req.ElectionType = electionType
		req.TimeoutMillis = 10000
		if partitions != nil {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = "elect", partitions
			req.Topics = append(req.Topics, rt)
		}
		return tb.roundTrip(req).(*kmsg.ElectLeadersResponse)
	}
	codes := func(resp *kmsg.ElectLeadersResponse) map[int32]int16 {
		out := map[int32]int16{}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				out[p.Partition] = p.ErrorCode
			}
		}
		return out
	}

	cases := []struct {
		name         string
		version      int16
		electionType int8
		partitions   []int32
		want         map[int32]int16
	}{
		// The only replica already leads: nothing to do.
		{"preferred, named", 2, 0, []int32{0, 1}, map[int32]int16{0: kerr.ElectionNotNeeded.Code, 1: kerr.ElectionNotNeeded.Code}},
		{"unclean with a live leader", 2, 1, []int32{0}, map[int32]int16{0: kerr.ElectionNotNeeded.Code}},
		{"unknown partition", 2, 0, []int32{7}, map[int32]int16{7: kerr.UnknownTopicOrPartition.Code}},
		// v0 has no ELECTION_NOT_NEEDED: success stands for it.
		{"v0", 0, 0, []int32{0}, map[int32]int16{0: 0}},
		// Every partition: those needing no election are left out.
		{"all partitions", 2, 0, nil, map[int32]int16{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := named(c.version, c.electionType, c.partitions...)
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				t.Fatalf("top-level error %v", err)
			}
			got := codes(resp)
			if len(got) != len(c.want) {
				t.Fatalf("partition codes %v, want %v", got, c.want)
			}
			for p, code := range c.want {
				if got[p] != code {
					t.Errorf("partition %d: %v, want %v", p, kerr.ErrorForCode(got[p]), kerr.ErrorForCode(code))
				}
			}
		})
	}
}

func TestDropNotNeeded(t *testing.T) {
	resp := kmsg.NewPtrElectLeadersResponse()
	for _, topic := range []struct {
		name  string
		codes []int16
	}{
		{"a", []int16{kerr.ElectionNotNeeded.Code, 0}},
		{"b", []int16{kerr.ElectionNotNeeded.Code}},
		{"c", []int16{kerr.PreferredLeaderNotAvailable.Code}},
	} {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = topic.name
		for i, code := range topic.codes {
			p := kmsg.NewElectLeadersResponseTopicPartition()
			p.Partition, p.ErrorCode = int32(i), code
			rt.Partitions = append(rt.Partitions, p)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	dropNotNeeded(resp)
	var got []string
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got = append(got, rt.Topic+"/"+errName(p.ErrorCode))
		}
	}
	want := []string{"a/none", "c/PREFERRED_LEADER_NOT_AVAILABLE"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("after dropNotNeeded: %v, want %v", got, want)
	}
}

func errName(code int16) string {
	var ke *kerr.Error
	if err := kerr.ErrorForCode(code); errors.As(err, &ke) {
		return ke.Message
	}
	return "none"
}
