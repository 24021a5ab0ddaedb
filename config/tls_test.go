package config

import (
	"slices"
	"testing"
)

func TestListenerTLSSettings(t *testing.T) {
	b, _, err := fromMap(map[string]string{
		"log.dirs":                       "/tmp/x",
		"listeners":                      "PLAINTEXT://:9092,SSL://:9093,INTERNAL://:9094",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL",
		"ssl.keystore.location":          "/etc/broker.jks",
		"ssl.client.auth":                "requested",
		"ssl.enabled.protocols":          "TLSv1.3",
		"listener.name.internal.ssl.keystore.location": "/etc/internal.p12",
		"listener.name.internal.ssl.keystore.type":     "PKCS12",
		"listener.name.internal.ssl.client.auth":       "required",
	}, fakeHost)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.ListenerTLS["PLAINTEXT"]; ok || len(b.ListenerTLS) != 2 {
		t.Fatalf("TLS settings for %v, want SSL and INTERNAL", b.ListenerTLS)
	}
	ssl, internal := b.ListenerTLS["SSL"], b.ListenerTLS["INTERNAL"]
	if ssl.KeystoreLocation != "/etc/broker.jks" || ssl.KeystoreType != "JKS" || ssl.ClientAuth != "requested" ||
		ssl.EndpointIdentification != "https" || ssl.PrincipalMappingRules != "DEFAULT" || !slices.Equal(ssl.EnabledProtocols, []string{"TLSv1.3"}) {
		t.Errorf("SSL listener: %+v", ssl)
	}
	if internal.KeystoreLocation != "/etc/internal.p12" || internal.KeystoreType != "PKCS12" || internal.ClientAuth != "required" ||
		!slices.Equal(internal.EnabledProtocols, []string{"TLSv1.3"}) {
		t.Errorf("INTERNAL listener: %+v", internal)
	}
	// KIP-684: on SASL_SSL only the listener's own ssl.client.auth counts.
	if got := b.listenerTLS("SECURE", "SASL_SSL").ClientAuth; got != "none" {
		t.Errorf("SASL_SSL client auth %q without a listener override, want none", got)
	}
	if got := b.listenerTLS("INTERNAL", "SASL_SSL").ClientAuth; got != "required" {
		t.Errorf("SASL_SSL client auth %q with a listener override, want required", got)
	}
}
