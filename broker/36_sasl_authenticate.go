package broker

// SaslAuthenticate, key 36, versions 0-2.
//
// v1 adds session_lifetime_ms (KIP-368: the client re-authenticates
// before it); v2 is flexible. A failed exchange answers
// SASL_AUTHENTICATION_FAILED with Kafka's message and closes the
// connection; on a listener without SASL, or after authentication, the
// answer is ILLEGAL_SASL_STATE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleSaslAuthenticate(_ context.Context, r *request, req *kmsg.SASLAuthenticateRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if r.sasl == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		resp.ErrorMessage = &msg
		return respond(resp)
	}
	res := r.sasl.authenticate(req.Version, req.SASLAuthBytes)
	resp.ErrorCode, resp.ErrorMessage, resp.SASLAuthBytes = res.code, res.message, res.token
	resp.SessionLifetimeMillis = res.sessionLifetime.Milliseconds()
	if res.closeAfter {
		b.logger.Info("SASL authentication failed", "listener", r.listener, "client", r.clientHost, "mechanism", r.sasl.mechanism, "err", res.cause)
	} else if res.code == 0 && r.sasl.phase == saslComplete {
		b.logger.Debug("SASL authentication succeeded", "listener", r.listener, "client", r.clientHost, "principal", r.sasl.principal.String(), "session_lifetime", res.sessionLifetime)
	}
	return reply{resp: resp, closeAfter: res.closeAfter}, nil
}
