package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/auth"
)

// knownPartitions splits the topics of a group request (OffsetCommit,
// OffsetDelete) into what the cluster has and what it does not: Kafka
// answers the unknown partitions UNKNOWN_TOPIC_OR_PARTITION and passes only
// the known ones to the coordinator. parts gives a topic's name and its
// partition list, which known's copies have trimmed to the known ones.
func knownPartitions[T, P any](b *Broker, topics []T, parts func(*T) (string, *[]P), id func(P) int32) (known []T, unknown map[string][]int32) {
	return splitPartitions(topics, parts, id, func(topic string, p int32) bool {
		_, ok := b.meta.partition(topic, p)
		return !ok
	})
}

// splitPartitions is knownPartitions for any test of a partition: refused
// partitions are returned by topic, the others in trimmed copies. The
// authorization checks of the group APIs split by it too.
func splitPartitions[T, P any](topics []T, parts func(*T) (string, *[]P), id func(P) int32, refuse func(topic string, p int32) bool) (known []T, unknown map[string][]int32) {
	for _, t := range topics {
		name, ps := parts(&t)
		var keep []P
		for _, p := range *ps {
			if !refuse(name, id(p)) {
				keep = append(keep, p)
				continue
			}
			if unknown == nil {
				unknown = map[string][]int32{}
			}
			unknown[name] = append(unknown[name], id(p))
		}
		if len(keep) > 0 {
			*ps = keep
			known = append(known, t)
		}
	}
	return known, unknown
}

// refusedPartitions are a request's partitions refused with one code, by
// topic.
type refusedPartitions struct {
	parts map[string][]int32
	code  int16
}

// readableKnownPartitions splits the topics of OffsetDelete or
// TxnOffsetCommit as Kafka does: a topic the principal may not READ is
// refused with TOPIC_AUTHORIZATION_FAILED, checked before its existence;
// of the others, partitions the cluster does not have get
// UNKNOWN_TOPIC_OR_PARTITION. known are the rest.
func readableKnownPartitions[T, P any](b *Broker, r *request, topics []T, parts func(*T) (string, *[]P), id func(P) int32) (known []T, refused []refusedPartitions) {
	allowed, denied := splitPartitions(topics, parts, id, func(topic string, _ int32) bool {
		return !b.authorize(r, auth.OpRead, auth.ResourceTopic, topic)
	})
	known, unknown := knownPartitions(b, allowed, parts, id)
	return known, []refusedPartitions{{unknown, kerr.UnknownTopicOrPartition.Code}, {denied, kerr.TopicAuthorizationFailed.Code}}
}

// eachRefused calls add with each refused topic, its partitions and code.
func eachRefused(refused []refusedPartitions, add func(topic string, partitions []int32, code int16)) {
	for _, r := range refused {
		for topic, ids := range r.parts {
			add(topic, ids, r.code)
		}
	}
}
