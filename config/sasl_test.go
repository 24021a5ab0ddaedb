package config

import (
	"strings"
	"testing"
	"time"
)

func saslBase() map[string]string {
	return map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
		"advertised.listeners":    "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`,
		"log.dirs": "/tmp/x",
	}
}

func TestSASLFor(t *testing.T) {
	m := saslBase()
	m["listener.name.sasl_plaintext.sasl.enabled.mechanisms"] = "SCRAM-SHA-512,PLAIN"
	m["connections.max.reauth.ms"] = "1000"
	m["listener.name.sasl_plaintext.plain.connections.max.reauth.ms"] = "2000"
	b, warnings, err := FromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		if strings.Contains(w, "sasl") {
			t.Errorf("warning for a real SASL config: %s", w)
		}
	}
	s := b.SASLFor("SASL_PLAINTEXT")
	if strings.Join(s.EnabledMechanisms, ",") != "SCRAM-SHA-512,PLAIN" {
		t.Errorf("mechanisms %v", s.EnabledMechanisms)
	}
	if !strings.Contains(s.JAAS["PLAIN"], "user_a") || s.JAAS["SCRAM-SHA-512"] != "" {
		t.Errorf("jaas %v", s.JAAS)
	}
	if s.MaxReauth["PLAIN"] != 2*time.Second || s.MaxReauth["SCRAM-SHA-512"] != time.Second {
		t.Errorf("reauth %v", s.MaxReauth)
	}
	if got := b.SASLFor("PLAINTEXT").EnabledMechanisms; strings.Join(got, ",") != "PLAIN,SCRAM-SHA-256" {
		t.Errorf("broker-wide mechanisms %v", got)
	}
}

func TestCheckSASL(t *testing.T) {
	for name, c := range map[string]struct {
		set  map[string]string
		want string
	}{
		"GSSAPI default": {map[string]string{"sasl.enabled.mechanisms": ""}, "enables GSSAPI"},
		"PLAIN no JAAS":  {map[string]string{"listener.name.sasl_plaintext.plain.sasl.jaas.config": ""}, "plain.sasl.jaas.config"},
		"inter-broker":   {map[string]string{"inter.broker.listener.name": "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"}, "sasl.mechanism.inter.broker.protocol"},
		"SASL_SSL GSSAPI": {map[string]string{
			"listeners":               "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094",
			"advertised.listeners":    "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094",
			"sasl.enabled.mechanisms": ""}, "enables GSSAPI"},
	} {
		m := saslBase()
		for k, v := range c.set {
			if v == "" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		if _, _, err := FromMap(m); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
	if _, _, err := FromMap(saslBase()); err != nil {
		t.Errorf("valid SASL config refused: %v", err)
	}
}
