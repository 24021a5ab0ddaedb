package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/brook-mq/brook/controller/store"
)

// deleteFenced deletes path (any version) in one transaction with the check
// of /controller_epoch's znode version, as Kafka's controller deletes the
// notifications and admin znodes it consumed (KafkaZkClient's
// deleteIsrChangeNotifications, deleteLogDirEventNotifications,
// deletePreferredReplicaElection, deleteTopicDeletions all take
// expectedControllerEpochZkVersion). A zombie controller, one whose
// session has not yet expired after another won the election, must not
// consume a notification meant for the new controller: its delete fails
// with errLostControl and the notification stays for the new one. A path
// already gone is not an error.
func (c *Controller) deleteFenced(ctx context.Context, path string) error {
	err := c.st.Multi(ctx,
		store.CheckOp{Path: ControllerEpochPath, Version: c.epochZkVersion},
		store.DeleteOp{Path: path, Version: store.AnyVersion})
	if err == nil || errors.Is(err, store.ErrNoNode) {
		return nil
	}
	return c.fenceErr(ctx, err, "delete "+path)
}

// fenceErr turns a failed fenced transaction into errLostControl when the
// controller epoch moved on (another controller took over), else wraps it.
func (c *Controller) fenceErr(ctx context.Context, err error, what string) error {
	if errors.Is(err, store.ErrBadVersion) {
		if _, stat, gerr := c.st.Get(ctx, ControllerEpochPath); gerr == nil && stat.Version != c.epochZkVersion {
			return fmt.Errorf("%w: %s: controller epoch moved on", errLostControl, what)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// assignTopicID gives a topic whose znode has no topic_id (created by a
// tool or broker older than Kafka 2.8) a new one, written fenced by the
// controller epoch and conditional on the znode's version, as Kafka's
// controller does at IBP 2.8+ when it finds such a topic
// (KafkaZkClient.setTopicIds in processTopicIds). Brokers need the id:
// LeaderAndISR v5+ and Fetch v13+ name topics by it.
func (c *Controller) assignTopicID(ctx context.Context, a TopicAssignment, version int32) (TopicAssignment, error) {
	a.TopicID = RandomUUID()
	err := c.st.Multi(ctx,
		store.CheckOp{Path: ControllerEpochPath, Version: c.epochZkVersion},
		store.SetOp{Path: TopicPath(a.Name), Data: encodeTopic(a), Version: version})
	if err != nil {
		return a, c.fenceErr(ctx, err, "set the topic id of "+a.Name)
	}
	c.log.Info("assigned a topic id to a topic without one", "topic", a.Name, "topic_id", UUIDString(a.TopicID))
	return a, nil
}
