package broker

// SaslHandshake, key 17, versions 0-1.
//
// v0 is followed by raw SASL tokens without Kafka framing; v1 by
// SaslAuthenticate requests. On a listener without SASL, or on an
// authenticated connection whose client cannot re-authenticate, the answer
// is ILLEGAL_SASL_STATE, as Kafka's KafkaApis gives. A mechanism the
// listener does not enable gets UNSUPPORTED_SASL_MECHANISM with the
// enabled list, and the connection closes.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleSaslHandshake(_ context.Context, r *request, req *kmsg.SASLHandshakeRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if r.sasl == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return respond(resp)
	}
	var closeAfter bool
	resp.ErrorCode, resp.SupportedMechanisms, closeAfter = r.sasl.handshake(req.Version, req.Mechanism)
	return reply{resp: resp, closeAfter: closeAfter}, nil
}
