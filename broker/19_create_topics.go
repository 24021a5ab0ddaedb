package broker

// CreateTopics, key 19, versions 0-7.
//
// v1 adds validate_only and error messages, v4 lets num_partitions and
// replication_factor be -1 for the broker defaults, v5 is flexible and
// returns the created topic's partitions, replication factor and configs,
// v7 its topic id; with an authorizer these need DESCRIBE_CONFIGS on the
// topic (else its config error is TOPIC_AUTHORIZATION_FAILED).
// controller_mutation_rate applies (mutation_quota.go),
// strictly from v6. A request for more than controller.MaxPartitionsPerRequest
// partitions over all its topics fails as a whole with POLICY_VIOLATION, as
// in Kafka 4.x, before anything is sized from its counts. Only the active controller serves it (NOT_CONTROLLER
// otherwise; the AdminClient routes by Metadata's controller_id). The answer
// waits, up to timeout_ms, until every new topic has leaders in this
// broker's metadata, so a client can use the topic as soon as it returns;
// past the timeout the topic still comes, but the answer is
// REQUEST_TIMED_OUT, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/controller"
)

func (b *Broker) handleCreateTopics(ctx context.Context, r *request, req *kmsg.CreateTopicsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
	if !b.isActiveController() {
		for i, rt := range req.Topics {
			resp.Topics[i] = createTopicsError(rt.Topic, kerr.NotController, "this broker is not the active controller")
		}
		return respond(resp)
	}
	var requested int64
	for _, rt := range req.Topics {
		requested += controller.RequestedPartitions(rt.NumPartitions, len(rt.ReplicaAssignment), b.cfg.NumPartitions)
	}
	if requested > controller.MaxPartitionsPerRequest {
		for i, rt := range req.Topics {
			resp.Topics[i] = createTopicsError(rt.Topic, kerr.PolicyViolation, controller.TooManyPartitionsMessage)
		}
		return respond(resp)
	}
	specs := make([]controller.TopicSpec, 0, len(req.Topics))
	index := make([]int, 0, len(req.Topics)) // specs[k] answers resp.Topics[index[k]]
	for i, rt := range req.Topics {
		if !b.authorizeCluster(r, auth.OpCreate) && !b.authorize(r, auth.OpCreate, auth.ResourceTopic, rt.Topic) {
			resp.Topics[i] = createTopicsError(rt.Topic, kerr.TopicAuthorizationFailed, kerr.TopicAuthorizationFailed.Message)
			continue
		}
		spec, msg := createTopicSpec(rt)
		if msg != "" {
			resp.Topics[i] = createTopicsError(rt.Topic, kerr.InvalidRequest, msg)
			continue
		}
		specs = append(specs, spec)
		index = append(index, i)
	}
	mutations := b.mutationQuota(r, req.Version, createTopicsStrictSince)
	results := b.createTopics(ctx, specs, req.ValidateOnly, mutationOption(mutations))
	want := map[string]int32{}
	for k, res := range results {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic, st.TopicID = res.Name, res.TopicID
		st.NumPartitions, st.ReplicationFactor = res.NumPartitions, res.ReplicationFactor
		st.ErrorCode = res.ErrorCode
		if res.ErrorCode != 0 {
			msg := res.ErrorMessage
			st.ErrorMessage = &msg
			st.NumPartitions, st.ReplicationFactor = -1, -1
		} else {
			if !req.ValidateOnly {
				want[res.Name] = res.NumPartitions
			}
			if b.authorize(r, auth.OpDescribeConfigs, auth.ResourceTopic, res.Name) {
				st.Configs = b.createdTopicConfigs(specs[k].Configs)
			} else {
				// As Kafka: the topic is created, but what describes it
				// (configs, counts, id) needs DESCRIBE_CONFIGS.
				st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
				st.NumPartitions, st.ReplicationFactor, st.TopicID = -1, -1, [16]byte{}
			}
		}
		resp.Topics[index[k]] = st
	}
	return b.replyWhenTopicsReady(ctx, resp, req.TimeoutMillis, want, mutations, &resp.ThrottleMillis, func(late map[string]bool, code int16) {
		for i := range resp.Topics {
			if late[resp.Topics[i].Topic] {
				resp.Topics[i].ErrorCode = code
			}
		}
	}), nil
}

// createTopicSpec turns one requested topic into a spec, or returns why the
// request itself is malformed (INVALID_REQUEST).
func createTopicSpec(rt kmsg.CreateTopicsRequestTopic) (controller.TopicSpec, string) {
	spec := controller.TopicSpec{Name: rt.Topic, NumPartitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor}
	if len(rt.ReplicaAssignment) > 0 {
		spec.Assignment = make(map[int32][]int32, len(rt.ReplicaAssignment))
		for _, a := range rt.ReplicaAssignment {
			if _, dup := spec.Assignment[a.Partition]; dup {
				return spec, "duplicate partition in replica assignment"
			}
			spec.Assignment[a.Partition] = a.Replicas
		}
	}
	if len(rt.Configs) > 0 {
		spec.Configs = make(map[string]string, len(rt.Configs))
		for _, c := range rt.Configs {
			if c.Value == nil {
				return spec, "null value not supported for topic config " + c.Name
			}
			spec.Configs[c.Name] = *c.Value
		}
	}
	return spec, ""
}

func createTopicsError(topic string, err *kerr.Error, msg string) kmsg.CreateTopicsResponseTopic {
	st := kmsg.NewCreateTopicsResponseTopic()
	st.Topic = topic
	st.ErrorCode = err.Code
	st.ErrorMessage = &msg
	st.NumPartitions, st.ReplicationFactor = -1, -1
	return st
}

// createdTopicConfigs lists every config of a new topic for v5+ answers.
func (b *Broker) createdTopicConfigs(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, e := range b.effectiveConfig().TopicEntries(overrides) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.ReadOnly, e.Source, e.Sensitive
		if !e.IsNull {
			v := e.Value
			c.Value = &v
		}
		out = append(out, c)
	}
	return out
}

func (b *Broker) isActiveController() bool { return b.ctrl != nil && b.ctrl.IsActive() }
