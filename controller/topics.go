package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/controller/store"
)

// TopicSpec is one topic of a CreateTopics request (or an auto-creation).
type TopicSpec struct {
	Name              string
	NumPartitions     int32 // -1: num.partitions
	ReplicationFactor int16 // -1: default.replication.factor
	// Assignment, if set, gives the replicas of each partition; it excludes
	// NumPartitions and ReplicationFactor, as in Kafka.
	Assignment map[int32][]int32
	Configs    map[string]string
}

// TopicResult is the outcome for one TopicSpec. On error NumPartitions and
// ReplicationFactor are -1, as Kafka answers.
type TopicResult struct {
	Name              string
	TopicID           [16]byte
	NumPartitions     int32
	ReplicationFactor int16
	ErrorCode         int16
	ErrorMessage      string
}

// CreateTopics validates each spec as Kafka's ZooKeeper-mode admin manager
// does, in the same order (existing topic, both counts and assignment given,
// assignment over live brokers, name, deletion pending, collisions, replica
// assignment shape, configs), and unless validateOnly writes
// /config/topics/<t> and /brokers/topics/<t> in one transaction. The active
// controller picks the new topic up from its watch. Duplicate names in one
// call all fail with INVALID_REQUEST.
func CreateTopics(ctx context.Context, st Store, specs []TopicSpec, validateOnly bool, opts ...Option) []TopicResult {
	o := resolveOptions(opts)
	results := make([]TopicResult, len(specs))
	counts := map[string]int{}
	var requested int64
	for _, s := range specs {
		counts[s.Name]++
		requested += RequestedPartitions(s.NumPartitions, len(s.Assignment), o.DefaultNumPartitions)
	}
	// The whole request fails, before anything is sized from its counts.
	if cerr := tooManyPartitions(requested); cerr != nil {
		for i, s := range specs {
			results[i] = TopicResult{Name: s.Name, NumPartitions: -1, ReplicationFactor: -1, ErrorCode: cerr.code, ErrorMessage: cerr.msg}
		}
		return results
	}
	var existing []string
	var loadErr error
	live, err := LiveBrokers(ctx, st)
	if err != nil {
		loadErr = err
	}
	brokers, racks := brokerRacks(live)
	if loadErr == nil {
		existing, _, err = st.Children(ctx, TopicsPath)
		if err != nil && !errors.Is(err, store.ErrNoNode) {
			loadErr = err
		}
	}
	for i, s := range specs {
		r := TopicResult{Name: s.Name, NumPartitions: -1, ReplicationFactor: -1}
		var cerr *codeError
		switch {
		case loadErr != nil:
			cerr = errCode(kerr.UnknownServerError, "read cluster metadata: %v", loadErr)
		case counts[s.Name] > 1:
			cerr = errCode(kerr.InvalidRequest, "Create topics request contains multiple entries for the following topics: %s", s.Name)
		default:
			var id [16]byte
			var a map[int32][]int32
			a, cerr = createOne(ctx, st, s, brokers, racks, existing, validateOnly, &id, o)
			if cerr == nil {
				r.TopicID = id
				r.NumPartitions = int32(len(a))
				r.ReplicationFactor = int16(len(a[0]))
			}
		}
		if cerr != nil {
			r.ErrorCode, r.ErrorMessage = cerr.code, cerr.msg
		}
		results[i] = r
	}
	return results
}

func createOne(ctx context.Context, st Store, s TopicSpec, brokers []int32, racks []string, existing []string, validateOnly bool, id *[16]byte, o Options) (map[int32][]int32, *codeError) {
	if slices.Contains(existing, s.Name) {
		return nil, errCode(kerr.TopicAlreadyExists, "Topic '%s' already exists.", s.Name)
	}
	if (s.NumPartitions != -1 || s.ReplicationFactor != -1) && len(s.Assignment) > 0 {
		return nil, errCode(kerr.InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
	}
	assignment := s.Assignment
	if len(assignment) == 0 {
		n, rf := s.NumPartitions, s.ReplicationFactor
		if n == -1 {
			n = o.DefaultNumPartitions
		}
		if rf == -1 {
			rf = o.DefaultReplicationFactor
		}
		var err error
		assignment, err = PlaceReplicas(brokers, racks, n, rf, -1, -1, 0, o.Rand)
		if err != nil {
			return nil, err.(*codeError)
		}
	}
	if err := ValidateTopicName(s.Name); err != nil {
		return nil, err.(*codeError)
	}
	if ok, _, err := st.Exists(ctx, DeleteTopicPath(s.Name)); err != nil {
		return nil, errCode(kerr.UnknownServerError, "check deletion of %s: %v", s.Name, err)
	} else if ok {
		return nil, errCode(kerr.TopicAlreadyExists, "Topic '%s' is marked for deletion.", s.Name)
	}
	var colliding []string
	for _, e := range existing {
		if topicsCollide(e, s.Name) {
			colliding = append(colliding, e)
		}
	}
	if len(colliding) > 0 {
		sort.Strings(colliding)
		return nil, errCode(kerr.InvalidTopicException, "Topic '%s' collides with existing topics: %s", s.Name, joinComma(colliding))
	}
	if err := validateManualAssignment(assignment); err != nil {
		return nil, err.(*codeError)
	}
	if o.ValidateConfigs != nil {
		if err := o.ValidateConfigs(s.Name, s.Configs); err != nil {
			return nil, errCode(kerr.InvalidConfig, "%s", err.Error())
		}
	}
	if validateOnly {
		return assignment, nil
	}
	if cerr := o.recordMutation(len(assignment)); cerr != nil {
		return nil, cerr
	}
	*id = RandomUUID()
	if err := writeNewTopic(ctx, st, s.Name, *id, assignment, s.Configs); err != nil {
		if errors.Is(err, store.ErrNodeExists) {
			return nil, errCode(kerr.TopicAlreadyExists, "Topic '%s' already exists.", s.Name)
		}
		return nil, errCode(kerr.UnknownServerError, "create topic %s: %v", s.Name, err)
	}
	return assignment, nil
}

// writeNewTopic writes the config and the assignment atomically, so a topic
// never appears without its configs and a lost creation race changes nothing.
func writeNewTopic(ctx context.Context, st Store, name string, id [16]byte, assignment map[int32][]int32, cfg map[string]string) error {
	if err := EnsureTopLevelPaths(ctx, st); err != nil {
		return err
	}
	cfgOp, err := setOrCreateOp(ctx, st, TopicConfigPath(name), encodeConfig(cfg))
	if err != nil {
		return err
	}
	return st.Multi(ctx, cfgOp, store.CreateOp{Path: TopicPath(name), Data: encodeTopic(TopicAssignment{Name: name, TopicID: id, Partitions: assignment})})
}

func setOrCreateOp(ctx context.Context, st Store, path string, data []byte) (store.Op, error) {
	ok, stat, err := st.Exists(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	if ok {
		return store.SetOp{Path: path, Data: data, Version: stat.Version}, nil
	}
	return store.CreateOp{Path: path, Data: data}, nil
}

// DeleteResult is the outcome of one topic of DeleteTopics.
type DeleteResult struct {
	Name         string
	TopicID      [16]byte
	ErrorCode    int16
	ErrorMessage string
}

// DeleteTopics marks topics for deletion by creating /admin/delete_topics/<t>;
// the active controller does the deletion. As in Kafka, a topic already
// marked is not an error, and internal topics are not refused here (only
// the kafka-topics tool refuses them). delete.topic.enable is the caller's
// check (TOPIC_DELETION_DISABLED).
func DeleteTopics(ctx context.Context, st Store, names []string, opts ...Option) []DeleteResult {
	o := resolveOptions(opts)
	out := make([]DeleteResult, len(names))
	for i, name := range names {
		r := DeleteResult{Name: name}
		a, err := ReadTopic(ctx, st, name)
		switch {
		case errors.Is(err, store.ErrNoNode):
			r.ErrorCode, r.ErrorMessage = kerr.UnknownTopicOrPartition.Code, "This server does not host this topic-partition."
		case err != nil:
			r.ErrorCode, r.ErrorMessage = kerr.UnknownServerError.Code, err.Error()
		default:
			r.TopicID = a.TopicID
			if cerr := o.recordMutation(len(a.Partitions)); cerr != nil {
				r.ErrorCode, r.ErrorMessage = cerr.code, cerr.msg
			} else if err := store.EnsurePath(ctx, st, DeleteTopicsPath); err != nil {
				r.ErrorCode, r.ErrorMessage = kerr.UnknownServerError.Code, err.Error()
			} else if _, err := st.Create(ctx, DeleteTopicPath(name), nil, 0); err != nil && !errors.Is(err, store.ErrNodeExists) {
				r.ErrorCode, r.ErrorMessage = kerr.UnknownServerError.Code, err.Error()
			}
		}
		out[i] = r
	}
	return out
}

// ReadTopic reads /brokers/topics/<t>; ErrNoNode if the topic does not exist.
func ReadTopic(ctx context.Context, st Store, name string) (TopicAssignment, error) {
	data, _, err := st.Get(ctx, TopicPath(name))
	if err != nil {
		return TopicAssignment{}, err
	}
	return decodeTopic(name, data)
}

// CreatePartitions raises a topic's partition count to newTotal, as Kafka's
// ZooKeeper-mode admin manager does: new partitions continue the existing
// assignment pattern unless assignment (one entry per new partition) is
// given. It rewrites /brokers/topics/<t> with a version check; the
// controller starts the new partitions.
func CreatePartitions(ctx context.Context, st Store, topic string, newTotal int32, assignment [][]int32, validateOnly bool, opts ...Option) (int16, string) {
	o := resolveOptions(opts)
	data, stat, err := st.Get(ctx, TopicPath(topic))
	if errors.Is(err, store.ErrNoNode) {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("The topic '%s' does not exist.", topic)
	}
	if err != nil {
		return kerr.UnknownServerError.Code, err.Error()
	}
	if ok, _, err := st.Exists(ctx, DeleteTopicPath(topic)); err != nil {
		return kerr.UnknownServerError.Code, err.Error()
	} else if ok {
		return kerr.InvalidTopicException.Code, "The topic is queued for deletion."
	}
	current, err := decodeTopic(topic, data)
	if err != nil {
		return kerr.UnknownServerError.Code, err.Error()
	}
	if len(current.Adding) > 0 || len(current.Removing) > 0 {
		return kerr.ReassignmentInProgress.Code, "A partition reassignment is in progress."
	}
	live, err := LiveBrokers(ctx, st)
	if err != nil {
		return kerr.UnknownServerError.Code, err.Error()
	}
	brokers, racks := brokerRacks(live)
	added, cerr := newPartitionsAssignment(current.Partitions, brokers, racks, newTotal, assignment, o)
	if cerr != nil {
		return cerr.code, cerr.msg
	}
	if validateOnly {
		return 0, ""
	}
	if cerr := o.recordMutation(len(added)); cerr != nil {
		return cerr.code, cerr.msg
	}
	for p, r := range added {
		current.Partitions[p] = r
	}
	if _, err := st.Set(ctx, TopicPath(topic), encodeTopic(current), stat.Version); err != nil {
		if errors.Is(err, store.ErrBadVersion) {
			return kerr.ReassignmentInProgress.Code, fmt.Sprintf("Topic %s changed while adding partitions; retry.", topic)
		}
		return kerr.UnknownServerError.Code, err.Error()
	}
	return 0, ""
}

// newPartitionsAssignment is the pure part of CreatePartitions.
func newPartitionsAssignment(existing map[int32][]int32, brokers []int32, racks []string, newTotal int32, manual [][]int32, o Options) (map[int32][]int32, *codeError) {
	old := int32(len(existing))
	inc := newTotal - old
	if inc > MaxPartitionsPerRequest || len(manual) > MaxPartitionsPerRequest {
		return nil, errCode(kerr.PolicyViolation, "%s", TooLargeOperationMessage)
	}
	if inc < 0 {
		return nil, errCode(kerr.InvalidPartitions, "Topic currently has %d partitions, which is higher than the requested %d.", old, newTotal)
	}
	if inc == 0 {
		return nil, errCode(kerr.InvalidPartitions, "Topic already has %d partitions.", old)
	}
	p0, ok := existing[0]
	if !ok || len(p0) == 0 {
		return nil, errCode(kerr.UnknownServerError, "the topic does not have partition 0")
	}
	rf := len(p0)
	if manual != nil {
		// The replica lists come from the request: bound them and look
		// brokers up in sets, so the scan stays linear in the request.
		live := make(map[int32]bool, len(brokers))
		for _, b := range brokers {
			live[b] = true
		}
		var unknown []int32
		seen := map[int32]bool{}
		for i, reps := range manual {
			if len(reps) > maxReplicasPerPartition {
				return nil, errCode(kerr.InvalidReplicaAssignment, "Replication factor %d of partition id %d is above %d.", len(reps), old+int32(i), maxReplicasPerPartition)
			}
			for _, b := range reps {
				if !live[b] && !seen[b] {
					seen[b] = true
					unknown = append(unknown, b)
				}
			}
		}
		if len(unknown) > 0 {
			return nil, errCode(kerr.InvalidReplicaAssignment, "Unknown broker(s) in replica assignment: %s.", joinInt32(unknown))
		}
		if int32(len(manual)) != inc {
			return nil, errCode(kerr.InvalidReplicaAssignment, "Increasing the number of partitions by %d but %d assignments provided.", inc, len(manual))
		}
		out := map[int32][]int32{}
		for i, reps := range manual {
			p := old + int32(i)
			if len(reps) == 0 {
				return nil, errCode(kerr.InvalidReplicaAssignment, "Cannot have replication factor of 0 for partition id %d.", p)
			}
			s := slices.Clone(reps)
			slices.Sort(s)
			if len(slices.Compact(s)) != len(reps) {
				return nil, errCode(kerr.InvalidReplicaAssignment, "Duplicate brokers not allowed in replica assignment: %s for partition id %d.", joinInt32(reps), p)
			}
			if len(reps) != rf {
				return nil, errCode(kerr.InvalidReplicaAssignment, "Inconsistent replication factor between partitions, partition 0 has %d while partition %d has %d.", rf, p, len(reps))
			}
			out[p] = slices.Clone(reps)
		}
		return out, nil
	}
	// Continue the pattern: start at the broker that leads partition 0 (its
	// index among the sorted ids, also for the rack-alternated list, as Kafka).
	start := 0
	for i, b := range brokers {
		if b >= p0[0] {
			start = i
			break
		}
	}
	a, err := PlaceReplicas(brokers, racks, inc, int16(rf), start, start, old, o.Rand)
	if err != nil {
		return nil, err.(*codeError)
	}
	return a, nil
}

// brokerRacks splits live brokers (sorted by id) into their ids and racks.
func brokerRacks(live []BrokerInfo) ([]int32, []string) {
	ids := make([]int32, len(live))
	racks := make([]string, len(live))
	for i, b := range live {
		ids[i], racks[i] = b.ID, b.Rack
	}
	return ids, racks
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

func joinInt32(s []int32) string {
	strs := make([]string, len(s))
	for i, x := range s {
		strs[i] = fmt.Sprint(x)
	}
	return joinComma(strs)
}
