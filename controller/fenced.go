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
