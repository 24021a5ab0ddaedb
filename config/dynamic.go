package config

import (
	"errors"
	"fmt"
	"sort"
)

var (
	// ErrReadOnly marks a broker config that cannot change without a
	// restart, or a per-broker config set at the cluster default level.
	ErrReadOnly = errors.New("config: not dynamically updatable")
)

// ValidateBrokerUpdate checks dynamic broker configs as AlterConfigs and
// IncrementalAlterConfigs must: known names, dynamically updatable ones
// (only cluster-wide ones when perBroker is false, the cluster default
// level), valid values. It returns the values in canonical form.
func ValidateBrokerUpdate(m map[string]string, perBroker bool) (map[string]string, error) {
	return validateDynamic(newTable(), m, perBroker)
}

func validateDynamic(t *table, m map[string]string, perBroker bool) (map[string]string, error) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]string, len(m))
	for _, k := range names {
		d, ok := t.broker[k]
		if base, prefixed := t.listenerOverride(k); !ok && prefixed {
			// Kafka takes every listener-prefixed form of a listener
			// config dynamically, per broker unless it is one of the
			// cluster-level connection limits.
			if !perBroker && !clusterLevelListenerConfig(base.Name) {
				return nil, fmt.Errorf("%w: %s can only be updated for a broker id, not at the cluster default level", ErrReadOnly, k)
			}
			v, err := base.parseFor(k, m[k])
			if err != nil {
				return nil, err
			}
			out[k] = v
			continue
		}
		if !ok {
			return nil, fmt.Errorf("%w: unknown broker config name: %s", ErrUnknownConfig, k)
		}
		switch {
		case d.ListenerOnly:
			return nil, fmt.Errorf("%w: %s can be updated dynamically only per listener, as %s<listener>.%s", ErrReadOnly, k, listenerPrefix, k)
		case d.Update == ReadOnly:
			return nil, fmt.Errorf("%w: cannot update %s dynamically", ErrReadOnly, k)
		case d.Update == PerBroker && !perBroker:
			return nil, fmt.Errorf("%w: %s can only be updated for a broker id, not at the cluster default level", ErrReadOnly, k)
		}
		v, err := d.parse(m[k])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// WithDynamic returns a copy of b with dynamic broker configs applied:
// perBroker (Kafka's /config/brokers/<id>) over clusterDefault
// (/config/brokers/<default>) over the static configs. Each call replaces
// the dynamic layers of b; b itself is unchanged.
func (b *Broker) WithDynamic(perBroker, clusterDefault map[string]string) (*Broker, error) {
	pb, err := validateDynamic(b.tab, perBroker, true)
	if err != nil {
		return nil, fmt.Errorf("per-broker dynamic config: %w", err)
	}
	cd, err := validateDynamic(b.tab, clusterDefault, false)
	if err != nil {
		return nil, fmt.Errorf("cluster default dynamic config: %w", err)
	}
	nb := &Broker{tab: b.tab, static: b.static, dynamicBroker: pb, dynamicDefault: cd, hostname: b.hostname}
	if err := nb.build(); err != nil {
		return nil, err
	}
	return nb, nil
}

// BrokerDefaultEntries describes the cluster-wide dynamic defaults, as
// DescribeConfigs for the broker resource "" answers: only configs set at
// that level, with only that level among the synonyms.
func (b *Broker) BrokerDefaultEntries() []ConfigEntry {
	var out []ConfigEntry
	for _, d := range b.tab.defs {
		v, ok := b.dynamicDefault[d.Name]
		if d.Scope != ScopeBroker || !ok {
			continue
		}
		var syns []Synonym
		for _, s := range b.brokerSynonymEntries(d.Name) {
			if s.Source == SourceDynamicDefault {
				syns = append(syns, s)
			}
		}
		out = append(out, b.entry(&d, v, false, syns))
	}
	return append(out, b.listenerEntries(true)...)
}
