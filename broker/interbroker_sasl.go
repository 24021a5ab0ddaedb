package broker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/config"
)

// peerMechanism is the SASL client brokers authenticate to each other
// with: sasl.mechanism.inter.broker.protocol, with the credentials of the
// inter-broker listener's JAAS config for it (username and password, as
// Kafka's login modules take them; OAUTHBEARER: an unsecured token for
// unsecuredLoginStringClaim_sub, as Kafka's unsecured login makes). nil
// when the inter-broker listener has no SASL.
func (b *Broker) peerMechanism() (sasl.Mechanism, error) {
	listener := b.cfg.InterBrokerListenerName
	if !config.IsSASL(b.cfg.ListenerSecurityProtocolMap[listener]) {
		return nil, nil
	}
	mech := b.cfg.SASLMechanismInterBrokerProtocol
	line := b.cfg.SASLFor(listener).JAAS[mech]
	if line == "" {
		return nil, fmt.Errorf("inter-broker SASL %s: listener %s has no sasl.jaas.config for it", mech, listener)
	}
	entries, err := auth.ParseJAAS(line)
	if err != nil {
		return nil, fmt.Errorf("inter-broker SASL %s: %w", mech, err)
	}
	switch mech {
	case auth.MechanismPlain:
		opts, _ := auth.JAASFor(entries, auth.PlainLoginModule)
		return plain.Auth{User: opts["username"], Pass: opts["password"]}.AsMechanism(), nil
	case auth.MechanismScramSHA256, auth.MechanismScramSHA512:
		opts, _ := auth.JAASFor(entries, auth.ScramLoginModule)
		a := scram.Auth{User: opts["username"], Pass: opts["password"]}
		if mech == auth.MechanismScramSHA256 {
			return a.AsSha256Mechanism(), nil
		}
		return a.AsSha512Mechanism(), nil
	case auth.MechanismOAuthBearer:
		opts, _ := auth.JAASFor(entries, auth.OAuthBearerLoginModule)
		sub := opts["unsecuredLoginStringClaim_sub"]
		lifetime := int64(3600)
		if s := opts["unsecuredLoginLifetimeSeconds"]; s != "" {
			if lifetime, err = strconv.ParseInt(s, 10, 64); err != nil {
				return nil, fmt.Errorf("inter-broker SASL OAUTHBEARER: unsecuredLoginLifetimeSeconds %q: %w", s, err)
			}
		}
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: unsecuredToken(sub, time.Now(), time.Duration(lifetime)*time.Second)}, nil
		}), nil
	}
	return nil, fmt.Errorf("inter-broker SASL mechanism %s is not implemented", mech)
}

// unsecuredToken is the unsigned JWS Kafka's unsecured login makes.
func unsecuredToken(sub string, now time.Time, lifetime time.Duration) string {
	claims, _ := json.Marshal(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(lifetime).Unix()})
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + "."
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate on a new peer
// connection and returns the session lifetime (0: none).
func (pc *peerConn) authenticate(ctx context.Context, clientID string, m sasl.Mechanism) (time.Duration, error) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	resp, err := pc.roundTrip(ctx, clientID, hs)
	if err != nil {
		return 0, fmt.Errorf("SaslHandshake: %w", err)
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return 0, fmt.Errorf("SaslHandshake %s: %w", m.Name(), err)
	}
	sess, msg, err := m.Authenticate(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("SASL %s: %w", m.Name(), err)
	}
	for range 10 {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(2)
		req.SASLAuthBytes = msg
		raw, err := pc.roundTrip(ctx, clientID, req)
		if err != nil {
			return 0, fmt.Errorf("SaslAuthenticate: %w", err)
		}
		resp := raw.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			detail := ""
			if resp.ErrorMessage != nil {
				detail = ": " + *resp.ErrorMessage
			}
			return 0, fmt.Errorf("SASL %s: %w%s", m.Name(), err, detail)
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return 0, fmt.Errorf("SASL %s: %w", m.Name(), err)
		}
		if done {
			return time.Duration(resp.SessionLifetimeMillis) * time.Millisecond, nil
		}
		msg = next
	}
	return 0, fmt.Errorf("SASL %s: exchange did not end", m.Name())
}
