package broker

// request_percentage (Kafka's ClientRequestQuotaManager): the time spent
// handling a client's requests, in percent of one thread, over the
// quota window. A client over it is throttled (at most one window, as
// Kafka bounds it), told so in throttle_time_ms of every response that
// has the field, and its connection muted for that time. The time counted
// is from the request's decoding to its handler's return; waiting (a long
// poll, acks=all) is not handling time, as it is not Kafka's request
// thread time. Cluster actions of brokers allowed them and what a SASL
// connection sends before it is authenticated are exempt, as in Kafka.

import "time"

// percentPerNano turns handling time into request_percentage units: one
// second of one thread is 100.
const percentPerNano = 100.0 / float64(time.Second)

// recordRequestTime records busy, the time spent handling r, and returns
// how long r's client is throttled for request_percentage.
func (b *Broker) recordRequestTime(r *request, busy time.Duration) time.Duration {
	if r.quotaExempt || !b.requestQuota.Enabled() {
		return 0
	}
	return b.requestQuota.Record(r.principal.Name, r.clientID, float64(busy)*percentPerNano)
}

// clusterActionExempt reports whether a request is one of Kafka's
// cluster actions, which brokers send one another and which Kafka
// answers exempt from the request quota when the sender may
// CLUSTER_ACTION: a follower's Fetch, LeaderAndIsr, StopReplica,
// UpdateMetadata, ControlledShutdown, WriteTxnMarkers, AlterPartition.
func clusterActionExempt(key int16, fromFollower bool) bool {
	switch key {
	case fetchKey:
		return fromFollower
	case 4, 5, 6, 7, 27, 56:
		return true
	}
	return false
}
