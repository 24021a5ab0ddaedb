package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/config"
)

// tlsHandshakeTimeout bounds a client's TLS handshake, so that a client
// that connects and sends nothing (or a ClientHello byte by byte) holds
// its connection slot no longer than this.
const tlsHandshakeTimeout = 10 * time.Second

// setupTLS builds the TLS server of each SSL listener and, when the
// inter-broker listener runs over TLS, the client side the broker uses
// to reach the others. A bad key store fails the start, as in Kafka.
func (b *Broker) setupTLS() error {
	b.serverTLS = map[string]*auth.ServerTLS{}
	for name, settings := range b.cfg.ListenerTLS {
		st, err := auth.NewServerTLS(settings)
		if err != nil {
			return fmt.Errorf("listener %s: %w", name, err)
		}
		b.serverTLS[name] = st
	}
	ib := b.cfg.InterBrokerListenerName
	if config.UsesTLS(b.cfg.ListenerSecurityProtocolMap[ib]) {
		ct, err := auth.NewClientTLS(b.cfg.ListenerTLS[ib])
		if err != nil {
			return fmt.Errorf("inter-broker listener %s: %w", ib, err)
		}
		b.peerTLS = ct
	}
	return nil
}

// tlsHandshake runs the server side of a TLS handshake on an accepted
// connection, within tlsHandshakeTimeout or until ctx ends, and returns
// the TLS connection with the principal of its client certificate
// (auth.Anonymous without one). SASL_SSL listeners run it before SASL.
// A plaintext Kafka request on a TLS port fails here as a malformed
// ClientHello; the caller closes the connection.
func tlsHandshake(ctx context.Context, nc net.Conn, st *auth.ServerTLS) (net.Conn, auth.Principal, error) {
	ctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	tc := tls.Server(nc, st.Config)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, auth.Principal{}, fmt.Errorf("TLS handshake: %w", err)
	}
	p, err := st.Principal(tc.ConnectionState())
	if err != nil {
		return nil, auth.Principal{}, fmt.Errorf("TLS principal: %w", err)
	}
	return tc, p, nil
}

// dialPeer connects to another broker's inter-broker listener, over TLS
// when that listener's protocol uses it (checking the server's host name
// as ssl.endpoint.identification.algorithm says).
func (b *Broker) dialPeer(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: peerDialTimeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil || b.peerTLS == nil {
		return nc, err
	}
	host, _, _ := net.SplitHostPort(addr)
	tc := tls.Client(nc, b.peerTLS.Config(host))
	hctx, cancel := context.WithTimeout(ctx, peerDialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}
