package broker

// DescribeCluster, key 60, versions 0-1.
//
// Answers from the metadata cache: cluster id, the active controller and
// the live brokers' endpoints on the listener the request came in on. v1
// adds endpoint_type: brokers (1) are served; controllers (2) exist only in
// KRaft, so they get UNSUPPORTED_ENDPOINT_TYPE, as a ZooKeeper-mode Kafka
// answers. Authorized operations, when asked for, are the cluster's the
// principal may perform (all of them without an authorizer).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const endpointTypeBrokers = 1

func (b *Broker) handleDescribeCluster(_ context.Context, r *request, req *kmsg.DescribeClusterRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != endpointTypeBrokers {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := "only broker endpoints exist in this cluster"
		resp.ErrorMessage = &msg
		return respond(resp)
	}
	resp.EndpointType = endpointTypeBrokers
	resp.ClusterID = b.clusterID
	resp.ControllerID = b.meta.controller()
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.clusterOps(r)
	}
	for _, ep := range b.meta.liveBrokers(r.listener) {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = ep.id, ep.host, ep.port, ep.rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	return respond(resp)
}
