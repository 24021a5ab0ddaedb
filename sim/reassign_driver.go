package sim

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
)

// alterReassignments serves AlterPartitionReassignments (v0: the
// replication factor may change) on the broker's real controller at once.
// ok is false when no answer goes back: the loop is blocked on a lost
// connection, and serves the request once it is back.
func (d *simController) alterReassignments(reqs []controller.ReassignmentRequest) (results map[controller.TP]controller.ApiError, code int16, ok bool) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	for _, r := range reqs {
		t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		t.Topic = r.TP.Topic
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Partition, p.Replicas = r.TP.Partition, r.Target
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
	}
	resp, ok := serveNow(d, func(done func(*kmsg.AlterPartitionAssignmentsResponse)) {
		d.c.AlterPartitionReassignmentsAsync(req, done)
	})
	if !ok {
		return nil, 0, false
	}
	if resp.ErrorCode != 0 {
		return nil, resp.ErrorCode, true
	}
	results = map[controller.TP]controller.ApiError{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			e := controller.ApiError{Code: p.ErrorCode}
			if p.ErrorMessage != nil {
				e.Message = *p.ErrorMessage
			}
			results[controller.TP{Topic: t.Topic, Partition: p.Partition}] = e
		}
	}
	return results, 0, true
}
