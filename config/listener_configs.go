package config

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Kafka lets some broker configs be given for one listener as
// listener.name.<listener>.<config> (lower-case listener name), statically
// and dynamically; SASL configs read per mechanism take the form
// listener.name.<listener>.<mechanism>.<config>. Brook applies the TLS
// ones per listener (config/tls.go); the others it accepts and validates
// as Kafka does, and the broker-wide value applies.

const listenerPrefix = "listener.name."

// listenerConfigurable reports the broker configs Kafka reads per listener:
// the TLS and SASL configs and the connection limits of
// DynamicListenerConfig (max.connections, max.connection.creation.rate,
// num.network.threads).
func listenerConfigurable(name string) bool {
	switch name {
	case "principal.builder.class", "connections.max.reauth.ms",
		"max.connections", "max.connection.creation.rate", "num.network.threads":
		return true
	}
	return strings.HasPrefix(name, "ssl.") || strings.HasPrefix(name, "sasl.")
}

// listenerMechanismConfig reports the configs Kafka reads per listener and
// SASL mechanism (DynamicBrokerConfig.ListenerMechanismConfigs).
func listenerMechanismConfig(name string) bool {
	switch name {
	case "sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
		"sasl.server.callback.handler.class", "connections.max.reauth.ms":
		return true
	}
	return false
}

// clusterLevelListenerConfig reports the listener configs whose
// listener-prefixed form may also be set as a cluster-wide default
// (DynamicBrokerConfig.ClusterLevelListenerConfigs); every other
// listener-prefixed config is per broker.
func clusterLevelListenerConfig(name string) bool {
	switch name {
	case "max.connections", "max.connection.creation.rate", "num.network.threads":
		return true
	}
	return false
}

// listenerOverride returns the definition behind a listener-prefixed name,
// or false when name is not one.
func (t *table) listenerOverride(name string) (*Def, bool) {
	rest, ok := strings.CutPrefix(name, listenerPrefix)
	if !ok {
		return nil, false
	}
	listener, base, ok := strings.Cut(rest, ".")
	if !ok || listener == "" {
		return nil, false
	}
	if d, ok := t.broker[base]; ok && d.Listener {
		return d, true
	}
	if mech, cfg, ok := strings.Cut(base, "."); ok && mech != "" && listenerMechanismConfig(cfg) {
		if d, ok := t.broker[cfg]; ok {
			return d, true
		}
	}
	return nil, false
}

// parseFor parses raw for the listener-prefixed name, so that an error
// names the key as given.
func (d *Def) parseFor(name, raw string) (string, error) {
	named := *d
	named.Name = name
	return named.parse(raw)
}

// listenerOverrideNote is the warning for a listener-prefixed config, ""
// when Brook applies it to that listener.
func listenerOverrideNote(d *Def) string {
	if d.Ignored {
		return d.Brook
	}
	if strings.HasPrefix(d.Name, "ssl.") || saslListenerConfig(d.Name) {
		return ""
	}
	return "Accepted but has no effect: Brook applies no per-listener overrides; the broker-wide " + d.Name + " applies."
}

// saslListenerConfig reports the listener configs Brook applies per
// listener (and per mechanism): the SASL ones of SASLFor.
func saslListenerConfig(name string) bool {
	switch name {
	case "sasl.enabled.mechanisms", "sasl.jaas.config", "connections.max.reauth.ms":
		return true
	}
	return false
}

// listenerEntries describes the listener-prefixed configs that are set,
// sorted by name, as DescribeConfigs lists them after the table's: the
// synonyms are the prefixed name's, then the base config's
// (DynamicBrokerConfig.brokerConfigSynonyms with listener overrides).
// defaultsOnly keeps the cluster default level alone, as for the broker
// resource "".
func (b *Broker) listenerEntries(defaultsOnly bool) []ConfigEntry {
	layers := []map[string]string{b.dynamicBroker, b.dynamicDefault, b.static}
	if defaultsOnly {
		layers = layers[1:2]
	}
	names := map[string]bool{}
	for _, layer := range layers {
		for k := range layer {
			if _, ok := b.tab.listenerOverride(k); ok {
				names[k] = true
			}
		}
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []ConfigEntry
	for _, k := range sorted {
		base, _ := b.tab.listenerOverride(k)
		syns := append(b.brokerSynonymEntries(k), b.brokerSynonymEntries(base.Name)...)
		if defaultsOnly {
			syns = slices.DeleteFunc(syns, func(s Synonym) bool { return s.Source != SourceDynamicDefault })
		}
		v, _ := b.Value(k)
		if defaultsOnly {
			v = b.dynamicDefault[k]
		}
		named := *base
		named.Name, named.ReadOnly = k, false
		out = append(out, b.entry(&named, v, false, syns))
	}
	return out
}

// ListenerConnectionCreationRate is a listener's own
// max.connection.creation.rate: listener.name.<listener>.max.connection.creation.rate,
// else the broker-wide value, as Kafka's listener quota reads its configs
// with the listener prefix overriding.
func (b *Broker) ListenerConnectionCreationRate(listener string) int32 {
	v, _ := b.listenerValue(listener, "max.connection.creation.rate")
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 0 {
		return b.MaxConnectionCreationRate
	}
	return int32(n)
}
