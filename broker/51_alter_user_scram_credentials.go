package broker

// AlterUserScramCredentials, key 51, version 0.
//
// Upserts and deletes SCRAM credentials as configs of /config/users/<user>
// in Kafka's format, with a /config/changes notification, as Kafka's
// ZooKeeper-mode brokers do; every broker reads credentials at each
// authentication, so the change applies on all of them at once.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
)

func (b *Broker) handleAlterUserScramCredentials(ctx context.Context, r *request, req *kmsg.AlterUserSCRAMCredentialsRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := controller.AlterScramCredentials(ctx, b.store, req)
	resp.SetVersion(req.Version)
	return respond(resp)
}
