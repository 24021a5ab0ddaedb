package broker

// controller_mutation_rate (KIP-599): CreateTopics, CreatePartitions and
// DeleteTopics count the partitions they create, add and delete against
// the client's quota (package quota has the token bucket). From
// CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 the quota is
// strict: once exceeded, a topic's mutation is refused with
// THROTTLING_QUOTA_EXCEEDED; older versions, whose clients do not know
// that code, are never refused. Either way the answer carries the
// throttle earned in throttle_time_ms and the connection is muted for it,
// as for the other client quotas.

import (
	"time"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/quota"
)

// Versions from which each API's mutation quota is strict.
const (
	createTopicsStrictSince     = 6
	createPartitionsStrictSince = 3
	deleteTopicsStrictSince     = 5
)

// mutationQuota is a request's controller mutation quota.
func (b *Broker) mutationQuota(r *request, version, strictSince int16) *quota.MutationQuota {
	return b.mutationQuotas.Quota(r.principal.Name, r.clientID, version >= strictSince)
}

// mutationOption hands q to the controller's topic operations.
func mutationOption(q *quota.MutationQuota) controller.Option {
	return controller.WithMutationQuota(func(partitions int) error { return q.Record(float64(partitions)) })
}

// mutationThrottle is the throttle q earned, for the answer's
// throttle_time_ms and the connection's mute.
func mutationThrottle(q *quota.MutationQuota) (time.Duration, int32) {
	d := q.ThrottleTime()
	return d, throttleMillis(d)
}
