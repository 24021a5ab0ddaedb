package broker

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/protocol"
)

// saslListener is what a SASL listener's connections authenticate with.
type saslListener struct {
	mechs     *auth.Mechanisms
	maxReauth map[string]time.Duration
}

// scramLookupTimeout bounds reading a credential from the metadata store.
const scramLookupTimeout = 10 * time.Second

// setupSASL builds the mechanisms of every SASL listener from its configs.
func (b *Broker) setupSASL() error {
	b.sasl = map[string]*saslListener{}
	for _, l := range b.cfg.Listeners {
		if !config.IsSASL(b.cfg.ListenerSecurityProtocolMap[l.Name]) {
			continue
		}
		s := b.cfg.SASLFor(l.Name)
		m := &auth.Mechanisms{Enabled: s.EnabledMechanisms, Rand: rand.Reader, Scram: b.scramLookup}
		for mech, line := range s.JAAS {
			if line == "" {
				continue
			}
			entries, err := auth.ParseJAAS(line)
			if err != nil {
				return fmt.Errorf("listener %s, %s sasl.jaas.config: %w", l.Name, mech, err)
			}
			switch mech {
			case auth.MechanismPlain:
				m.Plain = auth.PlainUsersFromJAAS(entries)
			case auth.MechanismOAuthBearer:
				if m.OAuthBearer, err = auth.UnsecuredValidatorFromJAAS(entries, time.Now); err != nil {
					return fmt.Errorf("listener %s: %w", l.Name, err)
				}
			}
		}
		if m.OAuthBearer == nil {
			m.OAuthBearer = &auth.UnsecuredValidator{PrincipalClaimName: "sub", ScopeClaimName: "scope", Now: time.Now}
		}
		b.sasl[l.Name] = &saslListener{mechs: m, maxReauth: s.MaxReauth}
	}
	return nil
}

// scramLookup reads SCRAM credentials from the user's config in the
// metadata store (ZooKeeper's /config/users/<user>, or the embedded
// store) at each authentication, so that a credential written by
// kafka-configs, by AlterUserScramCredentials on any broker, or straight
// into ZooKeeper applies at once.
func (b *Broker) scramLookup(m auth.ScramMechanism) auth.ScramLookup {
	return func(user string) (auth.ScramCredential, bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), scramLookupTimeout)
		defer cancel()
		cfg, err := controller.UserConfigs(ctx, b.store, user)
		if err != nil {
			return auth.ScramCredential{}, false, err
		}
		v, ok := cfg[m.Name]
		if !ok {
			return auth.ScramCredential{}, false, nil
		}
		c, err := auth.ParseScramCredential(v)
		if err != nil {
			return auth.ScramCredential{}, false, fmt.Errorf("credential of %s: %w", user, err)
		}
		return c, true, nil
	}
}

// newSASLSession is the authentication state of a new connection on
// listener; nil when the listener has no SASL.
func (b *Broker) newSASLSession(listener string, principal *auth.Principal) *saslSession {
	l := b.sasl[listener]
	if l == nil {
		return nil
	}
	now := b.saslNow
	if now == nil {
		now = time.Now
	}
	return newSASLSession(l.mechs, l.maxReauth, now, principal)
}

// readFrame reads the next frame. On a SASL connection it may be a raw
// token, of any size down to 0, and before authentication it is bounded
// by saslMaxReceiveSize.
func (c *conn) readFrame(r *bufio.Reader, buf []byte) ([]byte, error) {
	if c.sasl == nil {
		return protocol.ReadFrame(r, buf, c.frameLimit())
	}
	return protocol.ReadTokenFrame(r, buf, c.frameLimit())
}

// frameLimit is the largest frame readFrame accepts now.
func (c *conn) frameLimit() int32 {
	limit := c.b.cfg.SocketRequestMaxBytes
	if c.sasl != nil {
		if m := c.sasl.maxFrame.Load(); m > 0 {
			limit = min(limit, m)
		}
	}
	return limit
}

// applyRawToken evaluates a SASL token sent after SaslHandshake v0.
func (c *conn) applyRawToken(frame []byte) (*pending, error) {
	out, err := c.sasl.rawToken(frame)
	if err != nil {
		c.logger.Info("SASL authentication failed", "listener", c.listener, "err", err)
		return nil, err
	}
	return &pending{reply: reply{raw: true, token: out}}, nil
}

// writeRawToken writes a SASL token size-prefixed, without a header.
func (c *conn) writeRawToken(token, buf []byte) ([]byte, bool) {
	buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(token)))
	buf = append(buf, token...)
	if c.idleTimeout > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(c.idleTimeout))
	}
	if _, err := c.nc.Write(buf); err != nil {
		c.logger.Debug("write SASL token", "err", err)
		c.nc.Close()
		return buf, true
	}
	return buf, false
}

// logRequest writes Kafka's request log line (kafka.request.logger at
// DEBUG): the API, the client and the principal it runs as.
func (c *conn) logRequest(ctx context.Context, hdr protocol.RequestHeader) {
	if !c.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	clientID := ""
	if hdr.ClientID != nil {
		clientID = *hdr.ClientID
	}
	c.logger.Debug("request", "api", kmsg.NameForKey(hdr.Key), "version", hdr.Version, "correlation_id", hdr.CorrelationID,
		"client_id", clientID, "listener", c.listener, "principal", c.principal.String())
}
