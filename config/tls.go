package config

import "strings"

// TLS is one listener's TLS settings: each ssl.* config read as Kafka
// reads it for that listener (ChannelBuilders with the listener's prefix),
// listener.name.<listener>.<config> first, then the broker-wide value.
// Unset passwords and PEM values are "".
type TLS struct {
	KeystoreType             string
	KeystoreLocation         string
	KeystorePassword         string
	KeyPassword              string
	KeystoreKey              string
	KeystoreCertificateChain string
	TruststoreType           string
	TruststoreLocation       string
	TruststorePassword       string
	TruststoreCertificates   string
	// ClientAuth is required, requested or none.
	ClientAuth       string
	EnabledProtocols []string
	CipherSuites     []string
	// EndpointIdentification is "https" (clients check the server's host
	// name) or "" (they do not).
	EndpointIdentification string
	PrincipalMappingRules  string
}

// UsesTLS reports whether a security protocol runs over TLS.
func UsesTLS(protocol string) bool { return protocol == "SSL" || protocol == "SASL_SSL" }

// listenerString is name's value for listener: the listener-prefixed
// config when set, else the broker-wide one, else its default.
func (b *Broker) listenerString(listener, name string) string {
	if v, ok := b.listenerValue(listener, name); ok {
		return v
	}
	return b.str(name)
}

// listenerTLS reads the TLS settings of a listener of protocol SSL or
// SASL_SSL.
func (b *Broker) listenerTLS(listener, protocol string) TLS {
	v := func(name string) string { return b.listenerString(listener, name) }
	t := TLS{
		KeystoreType:             v("ssl.keystore.type"),
		KeystoreLocation:         v("ssl.keystore.location"),
		KeystorePassword:         v("ssl.keystore.password"),
		KeyPassword:              v("ssl.key.password"),
		KeystoreKey:              v("ssl.keystore.key"),
		KeystoreCertificateChain: v("ssl.keystore.certificate.chain"),
		TruststoreType:           v("ssl.truststore.type"),
		TruststoreLocation:       v("ssl.truststore.location"),
		TruststorePassword:       v("ssl.truststore.password"),
		TruststoreCertificates:   v("ssl.truststore.certificates"),
		ClientAuth:               v("ssl.client.auth"),
		EnabledProtocols:         listElems(v("ssl.enabled.protocols")),
		CipherSuites:             listElems(v("ssl.cipher.suites")),
		EndpointIdentification:   v("ssl.endpoint.identification.algorithm"),
		PrincipalMappingRules:    v("ssl.principal.mapping.rules"),
	}
	// KIP-684: a SASL_SSL listener asks for client certificates only when
	// ssl.client.auth is set for that listener; the broker-wide value
	// applies to SSL listeners alone.
	if protocol == "SASL_SSL" {
		t.ClientAuth = "none"
		if pv, ok := b.Value(listenerPrefix + strings.ToLower(listener) + ".ssl.client.auth"); ok {
			t.ClientAuth = pv
		}
	}
	return t
}

// fillTLS reads the TLS settings of every listener that runs over TLS.
func (b *Broker) fillTLS() {
	b.ListenerTLS = map[string]TLS{}
	for _, l := range b.Listeners {
		if p := b.ListenerSecurityProtocolMap[l.Name]; UsesTLS(p) {
			b.ListenerTLS[l.Name] = b.listenerTLS(l.Name, p)
		}
	}
}
