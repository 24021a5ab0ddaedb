package broker

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
