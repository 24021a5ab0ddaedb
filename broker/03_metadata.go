package broker

// Metadata, key 3, versions 0-12.
//
// v0: an empty topic list means all topics; v1+: null means all, empty
// means none, and controller_id appears. v2 adds cluster_id, v4
// allow_auto_topic_creation, v5 offline_replicas, v7 leader_epoch, v8-10
// authorized operations (all of them without an authorizer), v9
// is flexible, v10 adds topic ids, and from v10 a topic may be named by id
// alone (unknown ids: UNKNOWN_TOPIC_ID). v11 drops cluster-level authorized
// operations.
//
// Unknown topics are created when auto.create.topics.enable and the request
// allow it (v4+; always for v0-3), and then answered with
// LEADER_NOT_AVAILABLE until their leaders are elected, as Kafka does.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/controller"
)

func (b *Broker) handleMetadata(ctx context.Context, r *request, req *kmsg.MetadataRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, ep := range b.meta.liveBrokers(r.listener) {
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = ep.id, ep.host, ep.port, ep.rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	clusterID := b.clusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = b.meta.controller()

	isLive := b.meta.liveSet()
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, name := range b.meta.topicNamesSorted() {
			// All topics means those the principal may describe.
			if t, ok := b.meta.topic(name); ok && b.authorize(r, auth.OpDescribe, auth.ResourceTopic, name) {
				resp.Topics = append(resp.Topics, b.metadataTopic(t, req.Version, isLive))
			}
		}
		return b.respondMetadata(r, req, resp)
	}

	autoCreate := b.cfg.AutoCreateTopicsEnable && (req.Version < 4 || req.AllowAutoTopicCreation)
	var toCreate []controller.TopicSpec
	for _, rt := range req.Topics {
		var t snapshotTopic
		var ok bool
		if rt.Topic == nil {
			if t, ok = b.meta.topicByID(rt.TopicID); !ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		} else if !b.authorize(r, auth.OpDescribe, auth.ResourceTopic, *rt.Topic) {
			// Not even whether it exists is disclosed.
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.ErrorCode, mt.IsInternal = rt.Topic, kerr.TopicAuthorizationFailed.Code, isInternalTopic(*rt.Topic)
			resp.Topics = append(resp.Topics, mt)
			continue
		} else if t, ok = b.meta.topic(*rt.Topic); !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			switch {
			case controller.ValidateTopicName(*rt.Topic) != nil:
				mt.ErrorCode = kerr.InvalidTopicException.Code
			case autoCreate && !isInternalTopic(*rt.Topic) && !b.authorizeCluster(r, auth.OpCreate) &&
				!b.authorize(r, auth.OpCreate, auth.ResourceTopic, *rt.Topic):
				mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case autoCreate && !isInternalTopic(*rt.Topic):
				mt.ErrorCode = kerr.LeaderNotAvailable.Code
				toCreate = append(toCreate, controller.TopicSpec{Name: *rt.Topic, NumPartitions: -1, ReplicationFactor: -1})
			default:
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, b.metadataTopic(t, req.Version, isLive))
	}
	if len(toCreate) > 0 {
		for _, res := range b.createTopics(ctx, toCreate, false) {
			// A topic created concurrently by someone else is no error for
			// the asker: it exists, its leader is on the way.
			if res.ErrorCode != 0 && res.ErrorCode != kerr.TopicAlreadyExists.Code {
				b.logger.Warn("auto-create topic", "topic", res.Name, "code", res.ErrorCode, "msg", res.ErrorMessage)
				for i := range resp.Topics {
					if t := resp.Topics[i].Topic; t != nil && *t == res.Name {
						resp.Topics[i].ErrorCode = res.ErrorCode
					}
				}
			}
		}
	}
	return b.respondMetadata(r, req, resp)
}

// respondMetadata fills in authorized operations where the request asks for
// them: the cluster's, and every topic's in the answer, unknown ones
// included, as Kafka does.
func (b *Broker) respondMetadata(r *request, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) (reply, error) {
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.clusterOps(r)
	}
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			resp.Topics[i].AuthorizedOperations = topicAuthorizedOps
			if t := resp.Topics[i].Topic; b.acls != nil && t != nil {
				resp.Topics[i].AuthorizedOperations = b.authorizedOps(r, auth.ResourceTopic, *t)
			}
		}
	}
	return respond(resp)
}

// metadataTopic answers topic t; isLive is the cache's liveSet, read once
// for the whole request.
func (b *Broker) metadataTopic(t snapshotTopic, version int16, isLive func(int32) bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.name
	mt.Topic = &name
	mt.TopicID = t.id
	mt.IsInternal = isInternalTopic(t.name)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, len(t.partitions))
	for _, ps := range t.partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = ps.Partition
		mp.Leader = ps.Leader
		mp.LeaderEpoch = ps.LeaderEpoch
		mp.Replicas = ps.Replicas
		mp.ISR = ps.ISR
		mp.OfflineReplicas = ps.OfflineReplicas
		if ps.Leader < 0 || !isLive(ps.Leader) {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader = -1
		}
		if version == 0 && mp.ErrorCode == 0 && slices.ContainsFunc(ps.Replicas, func(id int32) bool { return !isLive(id) }) {
			// v0 clients learn of dead replicas only this way; Kafka
			// flags them for v0 alone.
			mp.ErrorCode = kerr.ReplicaNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// isInternalTopic reports Kafka's internal topics, hidden from auto-creation
// and protected from clients' deletes and produces.
func isInternalTopic(name string) bool {
	return name == consumerOffsetsTopic || name == transactionStateTopic
}

// Without an authorizer Kafka grants a client every
// operation the resource type supports when asked for authorized operations
// (bit i set for AclOperation code i). Left at INT32_MIN ("not requested"),
// kafka-python's admin reads bit 31 as an operation and fails on it.
const (
	// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
	topicAuthorizedOps int32 = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
	// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
	clusterAuthorizedOps int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
)

const (
	consumerOffsetsTopic  = "__consumer_offsets"
	transactionStateTopic = "__transaction_state"
)
