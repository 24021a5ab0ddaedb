package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/brook-mq/brook/config"
)

// ServerTLS is the TLS side of one SSL or SASL_SSL listener: the server
// configuration and how a client certificate becomes a principal.
type ServerTLS struct {
	Config *tls.Config
	mapper *PrincipalMapper
}

// NewServerTLS builds a listener's TLS server from its settings, as
// Kafka's DefaultSslEngineFactory in server mode. A listener needs a key
// store: without one no handshake could succeed.
func NewServerTLS(c config.TLS) (*ServerTLS, error) {
	base, cert, err := baseConfig(c)
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, errors.New("no key store: set ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain")
	}
	pool, err := loadTrustStore(c)
	if err != nil {
		return nil, err
	}
	base.Certificates = []tls.Certificate{*cert}
	base.ClientCAs = pool
	// A TLS 1.3 server sends its session tickets after the client's
	// Finished when it checks client certificates; they reach a client
	// that considers the handshake over, and kafka-python closes a
	// connection that turns readable with no request in flight. Kafka's
	// connections live long, so resumption is worth little: no tickets.
	base.SessionTicketsDisabled = true
	switch c.ClientAuth {
	case "required":
		base.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		// Java's wantClientAuth: a certificate that is sent must verify.
		base.ClientAuth = tls.VerifyClientCertIfGiven
	case "none", "":
		base.ClientAuth = tls.NoClientCert
	default:
		return nil, fmt.Errorf("invalid ssl.client.auth %q", c.ClientAuth)
	}
	mapper, err := ParsePrincipalMappingRules(c.PrincipalMappingRules)
	if err != nil {
		return nil, fmt.Errorf("ssl.principal.mapping.rules: %w", err)
	}
	return &ServerTLS{Config: base, mapper: mapper}, nil
}

// Principal is the principal of a connection after its handshake, as
// Kafka's DefaultKafkaPrincipalBuilder: the mapped distinguished name of
// the client certificate, or ANONYMOUS without one. An error (no rule
// maps the name) fails the authentication.
func (s *ServerTLS) Principal(st tls.ConnectionState) (Principal, error) {
	if len(st.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	dn, err := DistinguishedName(st.PeerCertificates[0].RawSubject)
	if err != nil {
		return Principal{}, err
	}
	name, err := s.mapper.Name(dn)
	if err != nil {
		return Principal{}, err
	}
	return User(name), nil
}

// ClientTLS is the client side of TLS to a listener, for the broker's
// own connections to other brokers.
type ClientTLS struct {
	base       *tls.Config
	verifyHost bool
}

// NewClientTLS builds the client side from a listener's settings, as
// Kafka's inter-broker clients use the inter-broker listener's: the key
// store (if any) is the client certificate, the trust store checks the
// server, and ssl.endpoint.identification.algorithm=https checks its host
// name.
func NewClientTLS(c config.TLS) (*ClientTLS, error) {
	base, cert, err := baseConfig(c)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		base.Certificates = []tls.Certificate{*cert}
	}
	if base.RootCAs, err = loadTrustStore(c); err != nil {
		return nil, err
	}
	ct := &ClientTLS{base: base}
	switch strings.ToLower(c.EndpointIdentification) {
	case "https":
		ct.verifyHost = true
	case "":
	default:
		return nil, fmt.Errorf("unsupported ssl.endpoint.identification.algorithm %q", c.EndpointIdentification)
	}
	return ct, nil
}

// Config is the configuration for connecting to host.
func (c *ClientTLS) Config(host string) *tls.Config {
	cfg := c.base.Clone()
	cfg.ServerName = host
	if !c.verifyHost {
		// The chain is still checked, against the trust store, but not
		// the name: Go has no switch for that alone.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(st tls.ConnectionState) error {
			if len(st.PeerCertificates) == 0 {
				return errors.New("tls: server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
			for _, ic := range st.PeerCertificates[1:] {
				opts.Intermediates.AddCert(ic)
			}
			_, err := st.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg
}

// baseConfig holds what server and client share: protocol versions and
// cipher suites; and it loads the key store (nil when none is set).
func baseConfig(c config.TLS) (*tls.Config, *tls.Certificate, error) {
	cfg := &tls.Config{}
	versions := map[string]uint16{
		"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11,
		"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
	}
	for _, p := range c.EnabledProtocols {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, ok := versions[p]
		if !ok {
			return nil, nil, fmt.Errorf("ssl.enabled.protocols: unsupported protocol %s", p)
		}
		if cfg.MinVersion == 0 || v < cfg.MinVersion {
			cfg.MinVersion = v
		}
		cfg.MaxVersion = max(cfg.MaxVersion, v)
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS12, tls.VersionTLS13
	}
	if len(c.CipherSuites) > 0 {
		ids := map[string]uint16{}
		for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
			ids[s.Name] = s.ID
		}
		for _, name := range c.CipherSuites {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			id, ok := ids[name]
			if !ok {
				return nil, nil, fmt.Errorf("ssl.cipher.suites: unsupported cipher suite %s", name)
			}
			cfg.CipherSuites = append(cfg.CipherSuites, id)
		}
	}
	cert, err := loadKeyStore(c)
	if err != nil {
		return nil, nil, err
	}
	return cfg, cert, nil
}
