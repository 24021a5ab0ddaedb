package config

import (
	"sort"
	"strconv"
)

// null in a table row means "no default" (Kafka's null).
const null = "\x00null"

const (
	maxLong = "9223372036854775807"
	maxInt  = "2147483647"
)

type opt func(*Def)

func valid(v validator) opt {
	return func(d *Def) { d.Validate, d.ValidValues = v.check, v.desc }
}

func update(u Update) opt { return func(d *Def) { d.Update = u } }

// brook records how Brook's use differs from Kafka's.
func brook(note string) opt { return func(d *Def) { d.Brook = note } }

// listenerOnly marks a config Kafka updates dynamically only with a
// listener prefix.
func listenerOnly() opt { return func(d *Def) { d.ListenerOnly = true } }

// unused marks a config Brook accepts for compatibility but ignores.
func unused(why string) opt {
	return func(d *Def) { d.Brook, d.Ignored = "Accepted but has no effect: "+why, true }
}

func newDef(scope Scope, name string, t Type, dflt string, imp Importance, doc string, opts []opt) Def {
	d := Def{Name: name, Type: t, Doc: doc, Scope: scope, Importance: imp}
	if dflt != null {
		d.Default, d.HasDefault = dflt, true
	}
	d.Sensitive = t == Password
	for _, o := range opts {
		o(&d)
	}
	d.ReadOnly = scope == ScopeBroker && d.Update == ReadOnly
	return d
}

func b(name string, t Type, dflt string, imp Importance, doc string, opts ...opt) Def {
	return newDef(ScopeBroker, name, t, dflt, imp, doc, opts)
}

// tc defines a topic config whose default comes from the broker config
// synonym ("" when it has none).
func tc(name string, t Type, dflt, synonym, doc string, opts ...opt) Def {
	d := newDef(ScopeTopic, name, t, dflt, Medium, doc, opts)
	d.Synonym = synonym
	return d
}

// Defs returns the table of every config Brook knows, broker configs
// first, each group sorted by name. The slice is fresh on every call.
func Defs() []Def {
	bs, ts := append(append(brokerDefs(), securityDefs()...), brookDefs()...), topicDefs()
	for i := range bs {
		bs[i].Listener = listenerConfigurable(bs[i].Name)
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return append(bs, ts...)
}

// table indexes the definitions by scope and name; built per Broker so
// that no package-level state exists.
type table struct {
	broker map[string]*Def
	topic  map[string]*Def
	defs   []Def
}

func newTable() *table {
	t := &table{broker: map[string]*Def{}, topic: map[string]*Def{}, defs: Defs()}
	for i := range t.defs {
		d := &t.defs[i]
		if d.Scope == ScopeTopic {
			t.topic[d.Name] = d
		} else {
			t.broker[d.Name] = d
		}
	}
	return t
}

// parse canonicalises and validates raw for d.
func (d *Def) parse(raw string) (string, error) {
	v, err := canonical(d.Type, raw)
	if err == nil && d.Validate != nil {
		err = d.Validate(v)
	}
	if err != nil {
		shown := raw
		if d.Sensitive {
			shown = "[hidden]"
		}
		return "", &ValueError{Name: d.Name, Value: shown, Reason: err.Error()}
	}
	return v, nil
}

// ValueError names the config and value that failed; errors.Is matches
// ErrInvalidValue.
type ValueError struct {
	Name, Value, Reason string
}

func (e *ValueError) Error() string {
	return "config: invalid value " + strconv.Quote(e.Value) + " for configuration " + e.Name + ": " + e.Reason
}

func (e *ValueError) Unwrap() error { return ErrInvalidValue }

// brokerSynonyms is the chain of broker keys that set one value, highest
// priority first (Kafka's DynamicBrokerConfig.brokerConfigSynonyms).
func brokerSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	}
	return []string{name}
}

// unitMs converts a synonym's unit to milliseconds (1 for ms keys).
func unitMs(name string) int64 {
	switch name {
	case "log.roll.hours", "log.roll.jitter.hours", "log.retention.hours":
		return 3600 * 1000
	case "log.retention.minutes":
		return 60 * 1000
	}
	return 1
}
