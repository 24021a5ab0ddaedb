package broker

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/log"
)

// reply is what a handler produces for one request.
type reply struct {
	// resp is the response, ready now.
	resp kmsg.Response
	// wait, when set instead of resp, computes the response after waiting
	// (acks=all, long-poll fetch); it runs off the connection's loop so that
	// later requests are applied meanwhile, and the response still goes out
	// in request order.
	wait func() kmsg.Response
	// none: send nothing (acks=0 produce).
	none bool
	// closeConn: close the connection after earlier responses are written;
	// a failed acks=0 produce is noticed by the client only this way.
	closeConn bool
	// closeAfter: close the connection once this response is written (a
	// failed SASL authentication).
	closeAfter bool
	// raw: resp is nil and token is written size-prefixed without a
	// response header (a SASL token after SaslHandshake v0).
	raw   bool
	token []byte
	// fetchRegions, for a Fetch response, holds each partition's records
	// as a segment file region that the writer sends with sendfile; the
	// response's own RecordBatches are then empty.
	fetchRegions [][]log.Slice
	// waitRegions, for a Fetch that waits, is where fetchRegions are
	// once wait returns: a long poll may add partitions to the answer.
	waitRegions *[][]log.Slice
	// throttle: the client is over its quota; the connection reads no
	// further request for this long after this one (KIP-219).
	throttle time.Duration
	// ownQuota: the handler recorded the request's time against
	// request_percentage itself (Fetch, which answers empty when either
	// quota throttles it), so the connection does not.
	ownQuota bool
}

func respond(resp kmsg.Response) (reply, error) { return reply{resp: resp}, nil }

// request is one decoded request with what handlers need of its connection.
type request struct {
	clientID   string
	clientHost string
	principal  auth.Principal
	// sasl is the connection's SASL state; nil on a listener without SASL.
	sasl          *saslSession
	correlationID int32
	// listener is the listener the connection came in on; Metadata and
	// FindCoordinator answer with endpoints of the same listener.
	listener string
	// start is when the request was decoded, from which its handling
	// time is counted against request_percentage.
	start time.Time
	// quotaExempt: the request's time is not counted against
	// request_percentage (cluster actions, requests before SASL
	// authentication), as Kafka exempts them.
	quotaExempt bool
}

type handlerFunc func(ctx context.Context, r *request, req kmsg.Request) (reply, error)

// handler is one row of the API table: a key's served version range and
// its function. ApiVersions is computed from this table.
type handler struct {
	min, max int16
	fn       handlerFunc
}

// typed adapts a handler written for its concrete request type.
func typed[R kmsg.Request](fn func(context.Context, *request, R) (reply, error)) handlerFunc {
	return func(ctx context.Context, r *request, req kmsg.Request) (reply, error) {
		return fn(ctx, r, req.(R))
	}
}

// handlerTable lists every API Brook serves. A key appears here only once
// its semantics are implemented and tested.
func (b *Broker) handlerTable() map[int16]handler {
	return map[int16]handler{
		// Produce from v0 as Kafka 3.9 and 4.x advertise it: librdkafka
		// before 2.11.1 turns compression off against a higher minimum
		// (librdkafka#4956, KAFKA-18659).
		0:  {0, 13, typed(b.handleProduce)},
		1:  {4, 17, typed(b.handleFetch)},
		2:  {1, 9, typed(b.handleListOffsets)},
		3:  {0, 12, typed(b.handleMetadata)},
		4:  {0, 7, b.handleControllerRequest},
		5:  {0, 4, b.handleControllerRequest},
		6:  {0, 8, b.handleControllerRequest},
		7:  {0, 3, typed(b.handleControlledShutdown)},
		8:  {2, 8, typed(b.handleOffsetCommit)},
		9:  {1, 8, typed(b.handleOffsetFetch)},
		10: {0, 5, typed(b.handleFindCoordinator)},
		11: {0, 9, typed(b.handleJoinGroup)},
		12: {0, 4, typed(b.handleHeartbeat)},
		13: {0, 5, typed(b.handleLeaveGroup)},
		14: {0, 5, typed(b.handleSyncGroup)},
		15: {0, 5, typed(b.handleDescribeGroups)},
		16: {0, 5, typed(b.handleListGroups)},
		17: {0, 1, typed(b.handleSaslHandshake)},
		18: {0, 4, typed(b.handleApiVersions)},
		19: {0, 7, typed(b.handleCreateTopics)},
		20: {0, 6, typed(b.handleDeleteTopics)},
		21: {0, 2, typed(b.handleDeleteRecords)},
		22: {0, 5, typed(b.handleInitProducerID)},
		23: {0, 4, typed(b.handleOffsetForLeaderEpoch)},
		24: {0, 5, typed(b.handleAddPartitionsToTxn)},
		25: {0, 4, typed(b.handleAddOffsetsToTxn)},
		26: {0, 5, typed(b.handleEndTxn)},
		27: {0, 2, typed(b.handleWriteTxnMarkers)},
		28: {0, 5, typed(b.handleTxnOffsetCommit)},
		29: {0, 3, typed(b.handleDescribeACLs)},
		30: {0, 3, typed(b.handleCreateACLs)},
		31: {0, 3, typed(b.handleDeleteACLs)},
		32: {0, 4, typed(b.handleDescribeConfigs)},
		33: {0, 2, typed(b.handleAlterConfigs)},
		34: {0, 2, typed(b.handleAlterReplicaLogDirs)},
		35: {0, 4, typed(b.handleDescribeLogDirs)},
		36: {0, 2, typed(b.handleSaslAuthenticate)},
		37: {0, 3, typed(b.handleCreatePartitions)},
		42: {0, 2, typed(b.handleDeleteGroups)},
		43: {0, 2, typed(b.handleElectLeaders)},
		44: {0, 1, typed(b.handleIncrementalAlterConfigs)},
		45: {0, 1, typed(b.handleAlterPartitionReassignments)},
		46: {0, 0, typed(b.handleListPartitionReassignments)},
		47: {0, 0, typed(b.handleOffsetDelete)},
		48: {0, 1, typed(b.handleDescribeClientQuotas)},
		49: {0, 1, typed(b.handleAlterClientQuotas)},
		50: {0, 0, typed(b.handleDescribeUserScramCredentials)},
		51: {0, 0, typed(b.handleAlterUserScramCredentials)},
		56: {0, 3, typed(b.handleAlterPartition)},
		60: {0, 1, typed(b.handleDescribeCluster)},
		61: {0, 0, typed(b.handleDescribeProducers)},
		65: {0, 0, typed(b.handleDescribeTransactions)},
		66: {0, 1, typed(b.handleListTransactions)},
		67: {0, 0, typed(b.handleAllocateProducerIDs)},
	}
}

// apiKeys lists the table for ApiVersions, sorted by key.
func (b *Broker) apiKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(b.handlers))
	for key, h := range b.handlers {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, h.min, h.max
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return keys
}
