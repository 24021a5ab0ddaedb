package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// refuse makes the request-level checks Kafka makes before handling the
// inter-broker and transaction APIs, and when one fails returns the whole
// answer Kafka gives then (true). Handlers call it first:
//
//	LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown,
//	AlterPartition, WriteTxnMarkers, AddPartitionsToTxn v4+: CLUSTER_ACTION
//	InitProducerId: WRITE on the transactional id; without one
//	  IDEMPOTENT_WRITE on the cluster or WRITE on some topic
//	AddPartitionsToTxn v0-3: WRITE on the transactional id and the topics
//	AddOffsetsToTxn: WRITE on the transactional id, READ on the group
//	EndTxn: WRITE on the transactional id
//	TxnOffsetCommit: WRITE on the transactional id, READ on the group
//	DescribeLogDirs, ListPartitionReassignments: DESCRIBE on the cluster
//	AlterPartitionReassignments, ElectLeaders: ALTER on the cluster
//	AlterReplicaLogDirs, AlterUserScramCredentials: ALTER on the cluster
//	DescribeUserScramCredentials: DESCRIBE on the cluster
//	DescribeClientQuotas: DESCRIBE_CONFIGS on the cluster
//	AlterClientQuotas: ALTER_CONFIGS on the cluster
func (b *Broker) refuse(r *request, req kmsg.Request) (kmsg.Response, bool) {
	if b.acls == nil {
		return nil, false
	}
	clusterAction := func() bool { return b.authorizeCluster(r, auth.OpClusterAction) }
	writeTxn := func(id string) bool { return b.authorize(r, auth.OpWrite, auth.ResourceTransactionalID, id) }
	readGroup := func(g string) bool { return b.authorize(r, auth.OpRead, auth.ResourceGroup, g) }
	clusterFailed, txnFailed := kerr.ClusterAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code
	resp := req.ResponseKind()
	switch q := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		if !clusterAction() {
			resp.(*kmsg.LeaderAndISRResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.StopReplicaRequest:
		if !clusterAction() {
			resp.(*kmsg.StopReplicaResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.UpdateMetadataRequest:
		if !clusterAction() {
			resp.(*kmsg.UpdateMetadataResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.ControlledShutdownRequest:
		if !clusterAction() {
			resp.(*kmsg.ControlledShutdownResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.AlterPartitionRequest:
		if !clusterAction() {
			resp.(*kmsg.AlterPartitionResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.AllocateProducerIDsRequest:
		if !clusterAction() {
			resp.(*kmsg.AllocateProducerIDsResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.WriteTxnMarkersRequest:
		if !clusterAction() {
			wr := resp.(*kmsg.WriteTxnMarkersResponse)
			for _, m := range q.Markers {
				rm := kmsg.NewWriteTxnMarkersResponseMarker()
				rm.ProducerID = m.ProducerID
				for _, t := range m.Topics {
					rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
						rp.Partition, rp.ErrorCode = p, clusterFailed
						rt.Partitions = append(rt.Partitions, rp)
					}
					rm.Topics = append(rm.Topics, rt)
				}
				wr.Markers = append(wr.Markers, rm)
			}
			return resp, true
		}
	case *kmsg.DescribeLogDirsRequest:
		// Kafka answers no log dirs (v3+: and the code) without DESCRIBE.
		if !b.authorizeCluster(r, auth.OpDescribe) {
			resp.(*kmsg.DescribeLogDirsResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.ListPartitionReassignmentsRequest:
		if !b.authorizeCluster(r, auth.OpDescribe) {
			resp.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		if !b.authorizeCluster(r, auth.OpAlter) {
			resp.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.ElectLeadersRequest:
		if !b.authorizeCluster(r, auth.OpAlter) {
			er := resp.(*kmsg.ElectLeadersResponse)
			er.ErrorCode = clusterFailed
			for _, t := range q.Topics {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewElectLeadersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, clusterFailed
					rt.Partitions = append(rt.Partitions, rp)
				}
				er.Topics = append(er.Topics, rt)
			}
			return resp, true
		}
	case *kmsg.AlterReplicaLogDirsRequest:
		// Kafka answers every partition asked for with the code.
		if !b.authorizeCluster(r, auth.OpAlter) {
			ar := resp.(*kmsg.AlterReplicaLogDirsResponse)
			for _, d := range q.Dirs {
				for _, t := range d.Topics {
					rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
						rp.Partition, rp.ErrorCode = p, clusterFailed
						rt.Partitions = append(rt.Partitions, rp)
					}
					ar.Topics = append(ar.Topics, rt)
				}
			}
			return resp, true
		}
	case *kmsg.DescribeClientQuotasRequest:
		if !b.authorizeCluster(r, auth.OpDescribeConfigs) {
			resp.(*kmsg.DescribeClientQuotasResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.AlterClientQuotasRequest:
		if !b.authorizeCluster(r, auth.OpAlterConfigs) {
			ar := resp.(*kmsg.AlterClientQuotasResponse)
			for _, e := range q.Entries {
				re := kmsg.NewAlterClientQuotasResponseEntry()
				re.ErrorCode = clusterFailed
				for _, ee := range e.Entity {
					rent := kmsg.NewAlterClientQuotasResponseEntryEntity()
					rent.Type, rent.Name = ee.Type, ee.Name
					re.Entity = append(re.Entity, rent)
				}
				ar.Entries = append(ar.Entries, re)
			}
			return resp, true
		}
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		if !b.authorizeCluster(r, auth.OpDescribe) {
			resp.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		// Kafka answers each user named in a deletion or an upsertion.
		if !b.authorizeCluster(r, auth.OpAlter) {
			ar := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
			seen := map[string]bool{}
			add := func(user string) {
				if seen[user] {
					return
				}
				seen[user] = true
				rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				rr.User, rr.ErrorCode = user, clusterFailed
				ar.Results = append(ar.Results, rr)
			}
			for _, d := range q.Deletions {
				add(d.Name)
			}
			for _, u := range q.Upsertions {
				add(u.Name)
			}
			return resp, true
		}
	case *kmsg.InitProducerIDRequest:
		ir := resp.(*kmsg.InitProducerIDResponse)
		ir.ProducerID, ir.ProducerEpoch = -1, -1
		if q.TransactionalID != nil && !writeTxn(*q.TransactionalID) {
			ir.ErrorCode = txnFailed
			return resp, true
		}
		if q.TransactionalID == nil && !b.authorizeCluster(r, auth.OpIdempotentWrite) &&
			!b.acls.AuthorizeAny(r.principal, aclHost(r), auth.OpWrite, auth.ResourceTopic) {
			ir.ErrorCode = clusterFailed
			return resp, true
		}
	case *kmsg.AddPartitionsToTxnRequest:
		if q.Version >= 4 {
			if !clusterAction() {
				resp.(*kmsg.AddPartitionsToTxnResponse).ErrorCode = clusterFailed
				return resp, true
			}
			return nil, false
		}
		txnOK := writeTxn(q.TransactionalID)
		topicsOK := true
		for _, t := range q.Topics {
			topicsOK = topicsOK && b.authorize(r, auth.OpWrite, auth.ResourceTopic, t.Topic)
		}
		if txnOK && topicsOK {
			return nil, false
		}
		ar := resp.(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range q.Topics {
			code := txnFailed
			if txnOK {
				code = kerr.OperationNotAttempted.Code
				if !b.authorize(r, auth.OpWrite, auth.ResourceTopic, t.Topic) {
					code = kerr.TopicAuthorizationFailed.Code
				}
			}
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			ar.Topics = append(ar.Topics, rt)
		}
		return resp, true
	case *kmsg.AddOffsetsToTxnRequest:
		switch {
		case !writeTxn(q.TransactionalID):
			resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode = txnFailed
			return resp, true
		case !readGroup(q.Group):
			resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, true
		}
	case *kmsg.EndTxnRequest:
		if !writeTxn(q.TransactionalID) {
			er := resp.(*kmsg.EndTxnResponse)
			er.ErrorCode, er.ProducerID, er.ProducerEpoch = txnFailed, -1, -1
			return resp, true
		}
	case *kmsg.TxnOffsetCommitRequest:
		code := int16(0)
		switch {
		case !writeTxn(q.TransactionalID):
			code = txnFailed
		case !readGroup(q.Group):
			code = kerr.GroupAuthorizationFailed.Code
		}
		if code == 0 {
			return nil, false
		}
		tr := resp.(*kmsg.TxnOffsetCommitResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			tr.Topics = append(tr.Topics, rt)
		}
		return resp, true
	}
	return nil, false
}
