package broker

// OffsetCommit, key 8, versions 2-8.
//
// Commits go to the group's coordinator, which appends them to its
// __consumer_offsets partition and answers once they are committed there.
// Generation -1 with an empty member id is a simple consumer's commit to
// an empty group. v3 adds throttle_time_ms, v5 drops retention_time_ms, v6
// adds committed_leader_epoch, v7 group_instance_id, v8 is flexible.
// Applied synchronously: a later OffsetFetch on the same connection sees it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleOffsetCommit(ctx context.Context, r *request, req *kmsg.OffsetCommitRequest) (reply, error) {
	return respond(b.groups.OffsetCommit(r.groupContext(ctx), req))
}
