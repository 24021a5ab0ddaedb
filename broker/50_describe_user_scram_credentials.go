package broker

// DescribeUserScramCredentials, key 50, version 0.
//
// Lists the SCRAM mechanisms and iterations of users' credentials, read
// from /config/users/<user> (ZooKeeper or the embedded store); a null or
// empty user list describes every user that has one, as Kafka does. kafka-configs --describe
// --entity-type users uses it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
)

func (b *Broker) handleDescribeUserScramCredentials(ctx context.Context, r *request, req *kmsg.DescribeUserSCRAMCredentialsRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	var users []string
	for _, u := range req.Users {
		users = append(users, u.Name)
	}
	resp := controller.DescribeScramCredentials(ctx, b.store, users, len(req.Users) == 0)
	resp.SetVersion(req.Version)
	return respond(resp)
}
