package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SASL mechanisms Brook implements; GSSAPI (Kerberos) is not one.
var saslImplemented = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}

// ListenerSASL is one SASL listener's settings, resolved as Kafka resolves
// them: listener.name.<listener>.<mechanism>.<config>, then
// listener.name.<listener>.<config>, then the broker-wide <config>.
type ListenerSASL struct {
	// EnabledMechanisms is sasl.enabled.mechanisms, in its order.
	EnabledMechanisms []string
	// JAAS maps a mechanism to its sasl.jaas.config line ("" when unset).
	JAAS map[string]string
	// MaxReauth maps a mechanism to its connections.max.reauth.ms; 0: the
	// session never expires.
	MaxReauth map[string]time.Duration
}

// listenerValue reads config for listener, the listener-prefixed form first.
func (b *Broker) listenerValue(listener, config string) (string, bool) {
	if v, ok := b.Value(listenerPrefix + strings.ToLower(listener) + "." + config); ok {
		return v, true
	}
	return b.Value(config)
}

// mechanismValue reads config for one mechanism of listener.
func (b *Broker) mechanismValue(listener, mechanism, config string) (string, bool) {
	if v, ok := b.Value(listenerPrefix + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + "." + config); ok {
		return v, true
	}
	return b.listenerValue(listener, config)
}

// SASLFor resolves the SASL settings of a listener.
func (b *Broker) SASLFor(listener string) ListenerSASL {
	v, _ := b.listenerValue(listener, "sasl.enabled.mechanisms")
	s := ListenerSASL{JAAS: map[string]string{}, MaxReauth: map[string]time.Duration{}}
	for _, m := range listElems(v) {
		if m = strings.TrimSpace(m); m != "" {
			s.EnabledMechanisms = append(s.EnabledMechanisms, m)
		}
	}
	for _, m := range s.EnabledMechanisms {
		s.JAAS[m], _ = b.mechanismValue(listener, m, "sasl.jaas.config")
		ms, _ := b.mechanismValue(listener, m, "connections.max.reauth.ms")
		n, _ := strconv.ParseInt(ms, 10, 64)
		s.MaxReauth[m] = dur(max(n, 0), time.Millisecond)
	}
	return s
}

// IsSASL reports whether a security protocol authenticates with SASL.
func IsSASL(protocol string) bool { return protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" }

// checkSASL refuses, at startup, SASL listeners Brook cannot serve: a
// mechanism it does not implement (GSSAPI, Kafka's default), PLAIN without
// a JAAS config to take its users from, and an inter-broker mechanism the
// inter-broker listener does not enable.
func (b *Broker) checkSASL() error {
	for _, l := range b.Listeners {
		if !IsSASL(b.ListenerSecurityProtocolMap[l.Name]) {
			continue
		}
		s := b.SASLFor(l.Name)
		if len(s.EnabledMechanisms) == 0 {
			return &ValueError{Name: "sasl.enabled.mechanisms", Value: "", Reason: fmt.Sprintf("listener %s uses SASL but enables no mechanism", l.Name)}
		}
		for _, m := range s.EnabledMechanisms {
			if !slices.Contains(saslImplemented, m) {
				return &ValueError{Name: "sasl.enabled.mechanisms", Value: strings.Join(s.EnabledMechanisms, ","),
					Reason: fmt.Sprintf("listener %s enables %s; Brook implements only %s", l.Name, m, strings.Join(saslImplemented, ", "))}
			}
			if m == "PLAIN" && s.JAAS[m] == "" {
				name := listenerPrefix + strings.ToLower(l.Name) + ".plain.sasl.jaas.config"
				return &ValueError{Name: name, Value: "", Reason: fmt.Sprintf("listener %s enables PLAIN, whose users come from the PlainLoginModule entry of this JAAS config", l.Name)}
			}
		}
		if l.Name == b.InterBrokerListenerName && !slices.Contains(s.EnabledMechanisms, b.SASLMechanismInterBrokerProtocol) {
			return &ValueError{Name: "sasl.mechanism.inter.broker.protocol", Value: b.SASLMechanismInterBrokerProtocol,
				Reason: fmt.Sprintf("sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication (listener %s)", l.Name)}
		}
	}
	return nil
}
