package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// Authorization: with authorizer.class.name set, every handler asks
// authorize what Kafka's KafkaApis asks its authorizer, and answers
// Kafka's error code when refused. Without it every request is allowed,
// as in Kafka.

// openAuthorizer builds the authorizer and loads the ACLs from the
// metadata store; the watch on the change notifications runs with the
// broker (Run).
func (b *Broker) openAuthorizer(ctx context.Context) error {
	if b.cfg.AuthorizerClassName == "" {
		return nil
	}
	if !auth.IsAuthorizerClass(b.cfg.AuthorizerClassName) {
		return fmt.Errorf("authorizer.class.name %s is not supported", b.cfg.AuthorizerClassName)
	}
	b.acls = auth.NewAuthorizer(auth.ParseSuperUsers(b.cfg.SuperUsers), b.cfg.AllowEveryoneIfNoACLFound)
	b.aclSync = auth.NewACLSync(b.store, b.acls, b.logger.With("component", "acl"))
	if err := b.aclSync.Load(ctx); err != nil {
		return fmt.Errorf("load acls: %w", err)
	}
	return nil
}

// aclHost is the client address as ACLs name hosts: without the leading
// slash of Kafka's InetAddress form that clientHost carries.
func aclHost(r *request) string { return strings.TrimPrefix(r.clientHost, "/") }

// authorize reports whether the request's principal may perform op on the
// named resource.
func (b *Broker) authorize(r *request, op auth.Operation, typ auth.ResourceType, name string) bool {
	if b.acls == nil {
		return true
	}
	return b.acls.Authorize(r.principal, aclHost(r), op, typ, name)
}

// authorizeCluster is authorize on the cluster resource.
func (b *Broker) authorizeCluster(r *request, op auth.Operation) bool {
	return b.authorize(r, op, auth.ResourceCluster, auth.ClusterName)
}

// authorizeAnyTransactionalID is Kafka's authorizeByResourceType: may the
// principal write some transactional id (an idempotent producer without
// IDEMPOTENT_WRITE on the cluster is allowed then).
func (b *Broker) authorizeAnyTransactionalID(r *request) bool {
	if b.acls == nil {
		return true
	}
	return b.acls.AuthorizeAny(r.principal, aclHost(r), auth.OpWrite, auth.ResourceTransactionalID)
}

// supportedOps are the operations each resource type has, as Kafka's
// AclEntry.supportedOperations; authorized-operations bitfields hold a
// subset of them.
var supportedOps = map[auth.ResourceType][]auth.Operation{
	auth.ResourceTopic:   {auth.OpRead, auth.OpWrite, auth.OpCreate, auth.OpDescribe, auth.OpDelete, auth.OpAlter, auth.OpDescribeConfigs, auth.OpAlterConfigs},
	auth.ResourceGroup:   {auth.OpRead, auth.OpDescribe, auth.OpDelete},
	auth.ResourceCluster: {auth.OpCreate, auth.OpClusterAction, auth.OpDescribeConfigs, auth.OpAlterConfigs, auth.OpIdempotentWrite, auth.OpAlter, auth.OpDescribe},
}

// authorizedOps is the authorized-operations bitfield of a resource: bit
// i set for each operation of code i the principal may perform.
func (b *Broker) authorizedOps(r *request, typ auth.ResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOps[typ] {
		if b.authorize(r, op, typ, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// clusterOps is the cluster's authorized-operations bitfield.
func (b *Broker) clusterOps(r *request) int32 {
	if b.acls == nil {
		return clusterAuthorizedOps
	}
	return b.authorizedOps(r, auth.ResourceCluster, auth.ClusterName)
}

// authorizeCoordinatorKey checks FindCoordinator's key as Kafka: DESCRIBE
// on the group or on the transactional id. A refused key comes back with
// its error code, an allowed one with code 0.
func (b *Broker) authorizeCoordinatorKey(r *request, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	switch {
	case keyType == coordinatorGroup && !b.authorize(r, auth.OpDescribe, auth.ResourceGroup, key):
		c.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case keyType == coordinatorTransaction && !b.authorize(r, auth.OpDescribe, auth.ResourceTransactionalID, key):
		c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
	}
	return c
}

// refuseConfigResource checks a config resource for DescribeConfigs
// (DESCRIBE_CONFIGS) or the alter APIs (ALTER_CONFIGS): on the topic
// (TOPIC_AUTHORIZATION_FAILED), or for brokers and broker loggers on the
// cluster (CLUSTER_AUTHORIZATION_FAILED). 0 when allowed.
func (b *Broker) refuseConfigResource(r *request, typ kmsg.ConfigResourceType, name string, op auth.Operation) (int16, string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !b.authorize(r, op, auth.ResourceTopic, name) {
			return kerr.TopicAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Message
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !b.authorizeCluster(r, op) {
			return kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message
		}
	}
	return 0, ""
}
