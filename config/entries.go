package config

// ConfigEntry is one config of a DescribeConfigs answer.
type ConfigEntry struct {
	Name      string
	Value     string
	IsNull    bool // the value is null (no default, or sensitive)
	Source    int8 // Source* constants (Kafka's ConfigSource)
	ReadOnly  bool // broker configs without a dynamic update mode
	Sensitive bool // the value and synonym values are hidden
	Type      Type // config_type of DescribeConfigs v3+
	Doc       string
	Synonyms  []Synonym
}

// Synonym is one place a config's value may come from, highest
// precedence first.
type Synonym struct {
	Name   string
	Value  string
	IsNull bool
	Source int8
}

// TopicEntries describes every topic config of a topic with the given
// overrides (as stored, already validated), sorted by name. The value is
// the effective one; the source is the first synonym's, or
// DEFAULT_CONFIG without synonyms.
func (b *Broker) TopicEntries(overrides map[string]string) []ConfigEntry {
	var out []ConfigEntry
	for _, d := range b.tab.defs {
		if d.Scope != ScopeTopic {
			continue
		}
		value := b.TopicValue(overrides, d.Name)
		var syns []Synonym
		if raw, ok := overrides[d.Name]; ok {
			v := raw
			if c, err := d.parse(raw); err == nil {
				v = c
			}
			syns = append(syns, Synonym{Name: d.Name, Value: v, Source: SourceTopic})
		}
		if d.Synonym != "" {
			syns = append(syns, b.brokerSynonymEntries(d.Synonym)...)
		}
		out = append(out, b.entry(&d, value, false, syns))
	}
	return out
}

// BrokerEntries describes every broker config of this broker, sorted by
// name, as DescribeConfigs for the broker's own id answers.
func (b *Broker) BrokerEntries() []ConfigEntry {
	var out []ConfigEntry
	for _, d := range b.tab.defs {
		if d.Scope != ScopeBroker {
			continue
		}
		v, ok := b.Value(d.Name)
		out = append(out, b.entry(&d, v, !ok, b.brokerSynonymEntries(d.Name)))
	}
	return append(out, b.listenerEntries(false)...)
}

func (b *Broker) entry(d *Def, value string, isNull bool, syns []Synonym) ConfigEntry {
	e := ConfigEntry{
		Name: d.Name, Value: value, IsNull: isNull, Source: SourceDefault,
		ReadOnly: d.ReadOnly, Sensitive: d.Sensitive, Type: d.Type, Doc: d.Doc,
		Synonyms: syns,
	}
	if len(syns) > 0 {
		e.Source = syns[0].Source
	}
	if d.Sensitive {
		e.Value, e.IsNull = "", true
		for i := range e.Synonyms {
			e.Synonyms[i].Value, e.Synonyms[i].IsNull = "", true
		}
	}
	return e
}

// brokerSynonymEntries lists where the broker config name may take its
// value from, as Kafka's ConfigHelper.configSynonyms: for each source in
// precedence order (dynamic per-broker, dynamic cluster default, static,
// default), every synonym of the chain set there; then everything before name itself is
// dropped. Kafka drops even the lower-priority synonyms when name is
// unset everywhere, so retention.ms shows no synonyms unless
// log.retention.ms is set; Brook answers the same.
func (b *Broker) brokerSynonymEntries(name string) []Synonym {
	chain := brokerSynonyms(name)
	var all []Synonym
	layers := []struct {
		values map[string]string
		source int8
	}{
		{b.dynamicBroker, SourceDynamicBroker},
		{b.dynamicDefault, SourceDynamicDefault},
		{b.static, SourceStaticBroker},
	}
	for _, l := range layers {
		for _, n := range chain {
			if v, ok := l.values[n]; ok {
				all = append(all, Synonym{Name: n, Value: v, Source: l.source})
			}
		}
	}
	for _, n := range chain {
		if d, ok := b.tab.broker[n]; ok && d.HasDefault {
			all = append(all, Synonym{Name: n, Value: d.Default, Source: SourceDefault})
		}
	}
	for i, s := range all {
		if s.Name == name {
			return all[i:]
		}
	}
	return nil
}

// EntriesNamed keeps the entries whose names are in names, in the order
// of entries; nil names keeps all (DescribeConfigs with null keys).
func EntriesNamed(entries []ConfigEntry, names []string) []ConfigEntry {
	if names == nil {
		return entries
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var out []ConfigEntry
	for _, e := range entries {
		if want[e.Name] {
			out = append(out, e)
		}
	}
	return out
}
