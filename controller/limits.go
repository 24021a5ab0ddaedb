package controller

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxPartitionsPerRequest bounds the partitions one CreateTopics or
// CreatePartitions request may create, over all its topics. Kafka's
// controller refuses a user operation that would write more than 10,000
// metadata records at once (QuorumController.MAX_RECORDS_PER_USER_OP, and
// MAX_PARTITIONS_PER_BATCH for CreateTopics) with POLICY_VIOLATION; without
// the bound, one request for 2^31-1 partitions sizes the assignment, the
// metadata write and the controller's work from a number a client chose.
const MaxPartitionsPerRequest = 10000

// maxReplicasPerPartition bounds a manual assignment's replica list: the
// replication factor is an int16 in the protocol and in Brook's results.
const maxReplicasPerPartition = math.MaxInt16

// Kafka's messages for requests over MaxPartitionsPerRequest: CreateTopics
// checks the total up front, CreatePartitions fails as the controller's
// bounded record list overflows.
const (
	TooManyPartitionsMessage = "Excessively large number of partitions per request."
	TooLargeOperationMessage = "Unable to perform excessively large batch operation."
)

// RequestedPartitions is an upper bound of the partitions one topic of a
// CreateTopics request creates, counted as Kafka counts it before any other
// validation: the manual assignment's length if there is one, else
// numPartitions, with -1 meaning num.partitions. Invalid counts add nothing;
// they fail on their own later.
func RequestedPartitions(numPartitions int32, assignments int, defaultNumPartitions int32) int64 {
	switch {
	case assignments > 0:
		return int64(assignments)
	case numPartitions == -1:
		return int64(defaultNumPartitions)
	case numPartitions > 0:
		return int64(numPartitions)
	}
	return 0
}

// PartitionsToAdd is how many partitions a CreatePartitions request to
// newTotal would add to the topic as the store has it now; 0 for a topic
// that does not exist or would not grow (those fail on their own later).
func PartitionsToAdd(ctx context.Context, st Store, topic string, newTotal int32) int64 {
	a, err := ReadTopic(ctx, st, topic)
	if err != nil {
		return 0
	}
	return max(int64(newTotal)-int64(len(a.Partitions)), 0)
}

func tooManyPartitions(n int64) *codeError {
	if n <= MaxPartitionsPerRequest {
		return nil
	}
	return errCode(kerr.PolicyViolation, "%s", TooManyPartitionsMessage)
}
