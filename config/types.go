package config

// Type is a config's data type. The values equal Kafka's
// DescribeConfigsResponse.ConfigType ids, so a handler can send int8(t) as
// the config_type field of DescribeConfigs v3+.
type Type int8

const (
	Unknown  Type = 0
	Boolean  Type = 1
	String   Type = 2
	Int      Type = 3
	Short    Type = 4
	Long     Type = 5
	Double   Type = 6
	List     Type = 7
	Class    Type = 8
	Password Type = 9
)

// String returns Kafka's name of the type, as kafka-configs and the
// AdminClient print it.
func (t Type) String() string {
	switch t {
	case Boolean:
		return "BOOLEAN"
	case String:
		return "STRING"
	case Int:
		return "INT"
	case Short:
		return "SHORT"
	case Long:
		return "LONG"
	case Double:
		return "DOUBLE"
	case List:
		return "LIST"
	case Class:
		return "CLASS"
	case Password:
		return "PASSWORD"
	default:
		return "UNKNOWN"
	}
}

// Scope says which kind of resource a config belongs to.
type Scope int8

const (
	// ScopeBroker configs are read from server.properties.
	ScopeBroker Scope = iota
	// ScopeTopic configs are per-topic overrides; each may have a broker
	// synonym that supplies the default.
	ScopeTopic
)

func (s Scope) String() string {
	if s == ScopeTopic {
		return "topic"
	}
	return "broker"
}

// Importance is Kafka's documentation grouping of configs.
type Importance int8

const (
	High Importance = iota
	Medium
	Low
)

func (i Importance) String() string {
	switch i {
	case High:
		return "high"
	case Medium:
		return "medium"
	default:
		return "low"
	}
}

// Update is Kafka's "update mode" of a broker config: whether
// IncrementalAlterConfigs may change it without a restart.
type Update int8

const (
	// ReadOnly configs need a restart.
	ReadOnly Update = iota
	// PerBroker configs may be changed for one broker.
	PerBroker
	// ClusterWide configs may be changed for one broker or as a
	// cluster-wide default.
	ClusterWide
)

func (u Update) String() string {
	switch u {
	case PerBroker:
		return "per-broker"
	case ClusterWide:
		return "cluster-wide"
	default:
		return "read-only"
	}
}

// Kafka's ConfigSource ids, as sent in DescribeConfigs (v1+).
const (
	SourceUnknown             int8 = 0
	SourceTopic               int8 = 1 // DYNAMIC_TOPIC_CONFIG
	SourceDynamicBroker       int8 = 2 // DYNAMIC_BROKER_CONFIG
	SourceDynamicDefault      int8 = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	SourceStaticBroker        int8 = 4 // STATIC_BROKER_CONFIG
	SourceDefault             int8 = 5 // DEFAULT_CONFIG
	SourceDynamicBrokerLogger int8 = 6 // DYNAMIC_BROKER_LOGGER_CONFIG
)

// Def defines one config key. The table of Defs drives parsing,
// validation, DescribeConfigs and docs/configuration.md.
type Def struct {
	Name string
	Type Type
	// Default is the canonical string form of the default value; when
	// HasDefault is false the default is null (Kafka's "null").
	Default    string
	HasDefault bool
	Doc        string
	Scope      Scope
	// Synonym is, for a topic config, the broker config that supplies its
	// default ("" when there is none). Some topic configs have a chain of
	// broker synonyms (segment.ms: log.roll.ms, then log.roll.hours);
	// Synonym is the first of the chain, as in Kafka.
	Synonym    string
	Importance Importance
	// Update is how a broker config may be changed at run time.
	Update Update
	// ReadOnly is true for broker configs whose Update is ReadOnly; it is
	// the read_only flag of DescribeConfigs. Topic configs are never
	// read-only.
	ReadOnly  bool
	Sensitive bool
	// Validate checks a value that already parses as Type (nil: any).
	Validate func(string) error
	// ValidValues describes what Validate accepts, for the docs.
	ValidValues string
	// Brook says how Brook uses the config when that differs from Kafka
	// (accepted but unused, or a narrower meaning).
	Brook string
	// Ignored configs are accepted for compatibility but have no effect;
	// setting one yields a warning.
	Ignored bool
	// Listener broker configs may also be given for one listener, as
	// listener.name.<listener>.<name>.
	Listener bool
	// ListenerOnly broker configs are updated dynamically only in their
	// listener-prefixed form, as Kafka's SSL key and trust store configs.
	ListenerOnly bool
}
