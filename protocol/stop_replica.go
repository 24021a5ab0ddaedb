package protocol

// StopReplica v4 on the wire, as Kafka 3.9 writes and reads it
// (StopReplicaRequest.json): ControllerId int32, isKRaftController bool
// (v4+, KIP-866), ControllerEpoch int32, BrokerEpoch int64, ... franz-go's
// kmsg (v1.15.1) puts isKRaftController after ControllerEpoch instead, so
// that a Kafka broker reading kmsg's bytes takes the epoch's first byte for
// the flag and the epoch's last three bytes and the broker epoch's first
// for the controller epoch: epoch 1 reads as 256. Such a broker then
// refuses every later request of the real controller epoch as coming from
// an old controller (ControllerMovedException, STALE_CONTROLLER_EPOCH),
// and Brook, reading Kafka's bytes through kmsg, took epoch 1 for 0 and
// refused a Kafka controller's StopReplica the same way. The two functions
// below move the flag between the two layouts, in place; UpdateMetadata v8
// and LeaderAndIsr v7, which gained the flag in the same KIP, are in
// Kafka's order in kmsg already.

// StopReplicaKey is StopReplica's API key.
const StopReplicaKey = 5

// stopReplicaFlagVersion is the first version with isKRaftController.
const stopReplicaFlagVersion = 4

// StopReplicaFromKafka rewrites a StopReplica request body in Kafka's
// field order into kmsg's, for kmsg to decode. Other keys, versions before
// 4 and bodies too short to hold the fields are left alone.
func StopReplicaFromKafka(key, version int16, body []byte) {
	if key != StopReplicaKey || version < stopReplicaFlagVersion || len(body) < 9 {
		return
	}
	// body[4] is the flag, body[5:9] the epoch: move the flag after it.
	flag := body[4]
	copy(body[4:8], body[5:9])
	body[8] = flag
}

// StopReplicaToKafka rewrites a StopReplica request body kmsg encoded into
// Kafka's field order; the inverse of StopReplicaFromKafka.
func StopReplicaToKafka(key, version int16, body []byte) {
	if key != StopReplicaKey || version < stopReplicaFlagVersion || len(body) < 9 {
		return
	}
	// body[4:8] is the epoch, body[8] the flag: move the flag before it.
	flag := body[8]
	copy(body[5:9], body[4:8])
	body[4] = flag
}
