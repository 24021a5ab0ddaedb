package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxTopicNameLength is Kafka's Topic.MAX_NAME_LENGTH.
const MaxTopicNameLength = 249

// codeError is a Kafka error code with its message, returned by validation.
type codeError struct {
	code int16
	msg  string
}

func (e *codeError) Error() string { return e.msg }

func errCode(err *kerr.Error, format string, args ...any) *codeError {
	return &codeError{code: err.Code, msg: fmt.Sprintf(format, args...)}
}

// ValidateTopicName applies Kafka's Topic.validate rules; a nil result means valid.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return errCode(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return errCode(kerr.InvalidTopicException, `Topic name cannot be "." or ".."`)
	case len(name) > MaxTopicNameLength:
		return errCode(kerr.InvalidTopicException, "Topic name is illegal, it can't be longer than %d characters, topic name: %s", MaxTopicNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return errCode(kerr.InvalidTopicException, "Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// topicsCollide reports whether two names differ only in '.' versus '_',
// which metric names cannot tell apart (Kafka's Topic.hasCollision).
func topicsCollide(a, b string) bool {
	norm := func(s string) string { return strings.ReplaceAll(s, ".", "_") }
	return norm(a) == norm(b)
}

// AssignReplicas spreads nPartitions partitions of replicationFactor replicas
// over brokers the way Kafka's rack-unaware AdminUtils assignment does: the
// first replica of partition p goes to broker (startIndex+p) mod n and the
// following replicas at a shift that grows by one each time the partitions
// have gone round all brokers, so leaders and followers are both spread.
// startIndex and shift < 0 are drawn from r. startPartition numbers the
// first new partition (for CreatePartitions). brokers must be sorted.
func AssignReplicas(brokers []int32, nPartitions int32, replicationFactor int16, startIndex, shift int, startPartition int32, r *rand.Rand) (map[int32][]int32, error) {
	if err := checkAssignCounts(len(brokers), nPartitions, replicationFactor); err != nil {
		return nil, err
	}
	n := len(brokers)
	return spread(n, nPartitions, startIndex, shift, startPartition, r, func(first, shift int) []int32 {
		replicas := []int32{brokers[first]}
		for j := range int(replicationFactor) - 1 {
			replicas = append(replicas, brokers[(first+1+(shift+j)%(n-1))%n])
		}
		return replicas
	}), nil
}

// spread is the round robin both of Kafka's assignments share, over n
// brokers: partition p's first replica at index (p+startIndex) mod n, and
// a follower shift that grows by one each time the partitions have gone
// round; replicas picks the replicas from that index and shift. startIndex
// and shift < 0 are drawn from r.
func spread(n int, nPartitions int32, startIndex, shift int, startPartition int32, r *rand.Rand, replicas func(first, shift int) []int32) map[int32][]int32 {
	if startIndex < 0 {
		startIndex = r.IntN(n)
	}
	if shift < 0 {
		shift = r.IntN(n)
	}
	out := make(map[int32][]int32, nPartitions)
	p := max(startPartition, 0)
	for range nPartitions {
		if p > 0 && int(p)%n == 0 {
			shift++
		}
		out[p] = replicas((int(p)+startIndex)%n, shift)
		p++
	}
	return out
}

// checkAssignCounts is the validation both assignments start with.
func checkAssignCounts(nBrokers int, nPartitions int32, replicationFactor int16) error {
	if nPartitions <= 0 {
		return errCode(kerr.InvalidPartitions, "Number of partitions must be larger than 0.")
	}
	if nPartitions > MaxPartitionsPerRequest {
		// Callers check first; this keeps the maps bounded whatever they pass.
		return errCode(kerr.PolicyViolation, "%s", TooManyPartitionsMessage)
	}
	if replicationFactor <= 0 {
		return errCode(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0.")
	}
	if int(replicationFactor) > nBrokers {
		return errCode(kerr.InvalidReplicationFactor, "Replication factor: %d larger than available brokers: %d.", replicationFactor, nBrokers)
	}
	return nil
}

// validateManualAssignment checks a CreateTopics replica assignment as
// Kafka's AdminZkClient.validateTopicCreate does. Unknown brokers are allowed
// there, as in Kafka (the partitions stay offline until the brokers come).
func validateManualAssignment(a map[int32][]int32) error {
	if len(a) == 0 {
		return errCode(kerr.InvalidReplicaAssignment, "Replica assignment is empty.")
	}
	if cerr := tooManyPartitions(int64(len(a))); cerr != nil {
		return cerr
	}
	rf := -1
	for _, p := range sortedInt32(a) {
		reps := a[p]
		if rf == -1 {
			rf = len(reps)
		} else if len(reps) != rf {
			return errCode(kerr.InvalidReplicaAssignment, "All partitions should have the same number of replicas")
		}
		if len(reps) == 0 {
			return errCode(kerr.InvalidReplicaAssignment, "Cannot have replication factor of 0 for partition id %d.", p)
		}
		if len(reps) > maxReplicasPerPartition {
			return errCode(kerr.InvalidReplicaAssignment, "Replication factor %d of partition id %d is above %d.", len(reps), p, maxReplicasPerPartition)
		}
		s := slices.Clone(reps)
		slices.Sort(s)
		if len(slices.Compact(s)) != len(reps) {
			return errCode(kerr.InvalidReplicaAssignment, "Duplicate replica assignment found: %v", a)
		}
	}
	for i := range int32(len(a)) {
		if _, ok := a[i]; !ok {
			return errCode(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
		}
	}
	return nil
}
