package broker

// ElectLeaders, key 43, versions 0-2.
//
// Runs preferred (v0+) or unclean (v1+, election_type) leader elections
// through the controller (kafka-leader-election.sh, AdminClient
// electLeaders). A broker that is not the active controller answers
// NOT_CONTROLLER for each named partition and the admin client retries at
// Metadata's controller. v1 adds the top-level error code, which stays 0
// as in Kafka (only authorization sets it); v2 is flexible. With topics
// null (every partition) the answer leaves out the partitions whose
// election was not needed, as Kafka's does; named partitions are always
// answered.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleElectLeaders(ctx context.Context, r *request, req *kmsg.ElectLeadersRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	if b.ctrl == nil {
		return respond(notControllerElection(req))
	}
	resp, err := b.ctrl.ElectLeaders(ctx, req)
	if err != nil {
		return reply{}, fmt.Errorf("elect leaders: %w", err)
	}
	if req.Topics == nil {
		dropNotNeeded(resp)
	}
	return respond(resp)
}

// notControllerElection answers every named partition with NOT_CONTROLLER.
func notControllerElection(req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	msg := "This is not the correct controller for this cluster."
	for _, rt := range req.Topics {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition, sp.ErrorCode, sp.ErrorMessage = p, kerr.NotController.Code, &msg
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// dropNotNeeded removes ELECTION_NOT_NEEDED partitions, and topics left
// without partitions, from an all-partitions answer.
func dropNotNeeded(resp *kmsg.ElectLeadersResponse) {
	for i := range resp.Topics {
		resp.Topics[i].Partitions = slices.DeleteFunc(resp.Topics[i].Partitions, func(p kmsg.ElectLeadersResponseTopicPartition) bool {
			return p.ErrorCode == kerr.ElectionNotNeeded.Code
		})
	}
	resp.Topics = slices.DeleteFunc(resp.Topics, func(t kmsg.ElectLeadersResponseTopic) bool { return len(t.Partitions) == 0 })
}
