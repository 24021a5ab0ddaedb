package broker

// CreatePartitions, key 37, versions 0-3.
//
// Raises a topic's partition count, optionally with a manual assignment of
// the new partitions. v2 is flexible. A request that would add more than
// controller.MaxPartitionsPerRequest partitions over all its topics fails as
// a whole with POLICY_VIOLATION, as Kafka's bounded controller operations do. The answer lists every topic of the
// request (a duplicated topic: INVALID_REQUEST) and waits, up to
// timeout_ms, until the new partitions have leaders here. Only the active
// controller serves it. controller_mutation_rate applies
// (mutation_quota.go), strictly from v3.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/controller"
)

func (b *Broker) handleCreatePartitions(ctx context.Context, r *request, req *kmsg.CreatePartitionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	counts := map[string]int{}
	for _, rt := range req.Topics {
		counts[rt.Topic]++
	}
	tooLarge := b.isActiveController() && b.tooManyNewPartitions(ctx, req)
	mutations := b.mutationQuota(r, req.Version, createPartitionsStrictSince)
	want := map[string]int32{}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var code int16
		var msg string
		switch {
		case !b.isActiveController():
			code, msg = kerr.NotController.Code, "this broker is not the active controller"
		case tooLarge:
			code, msg = kerr.PolicyViolation.Code, controller.TooLargeOperationMessage
		case counts[rt.Topic] > 1:
			code, msg = kerr.InvalidRequest.Code, "duplicate topic in request"
		case !b.authorize(r, auth.OpAlter, auth.ResourceTopic, rt.Topic):
			code, msg = kerr.TopicAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Message
		default:
			var assignment [][]int32
			for _, a := range rt.Assignment {
				assignment = append(assignment, a.Replicas)
			}
			code, msg = controller.CreatePartitions(ctx, b.store, rt.Topic, rt.Count, assignment, req.ValidateOnly, mutationOption(mutations))
			if code == 0 && !req.ValidateOnly {
				want[rt.Topic] = rt.Count
			}
		}
		st.ErrorCode = code
		if code != 0 {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return b.replyWhenTopicsReady(ctx, resp, req.TimeoutMillis, want, mutations, &resp.ThrottleMillis, func(late map[string]bool, code int16) {
		for i := range resp.Topics {
			if late[resp.Topics[i].Topic] {
				resp.Topics[i].ErrorCode = code
			}
		}
	}), nil
}

// tooManyNewPartitions reports whether the request would add more than
// controller.MaxPartitionsPerRequest partitions; a manual assignment counts
// with its length, which may exceed what the count asks for.
func (b *Broker) tooManyNewPartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) bool {
	var total int64
	for _, rt := range req.Topics {
		total += max(controller.PartitionsToAdd(ctx, b.store, rt.Topic, rt.Count), int64(len(rt.Assignment)))
		if total > controller.MaxPartitionsPerRequest {
			return true
		}
	}
	return false
}
