package quota

// Kafka's client quota keys (QuotaConfig).
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
)

// Name is one part of a quota entity: absent (the zero Name), the
// default entity (<default> in ZooKeeper), or a named user or client id.
type Name struct {
	Set     bool
	Default bool
	Name    string
}

// Named is the Name of a user or client id.
func Named(n string) Name { return Name{Set: true, Name: n} }

// DefaultName is the default user or client id, <default>.
var DefaultName = Name{Set: true, Default: true}

// Entity is a quota entity as Kafka stores it: /config/users/<user>,
// /config/clients/<client-id>, /config/users/<user>/clients/<client-id>,
// or /config/ips/<ip> (an IP is never combined with the others).
type Entity struct {
	User   Name
	Client Name
	IP     Name
}

// Table is the quotas configured, by entity and quota key.
type Table map[Entity]map[string]float64

// Key names the rate a client's usage is recorded in. As Kafka's default
// quota callback, it is the (user, client-id) the matching entity was
// chosen by, so that all clients of a user with a user quota share one
// rate while a default quota gives each user (or client id) its own.
type Key struct {
	User, Client string
}

// Resolve finds the quota for key (producer_byte_rate, ...) of a client
// of user (the principal's name) with clientID, in Kafka's order of
// precedence:
//
//	/config/users/<user>/clients/<client-id>
//	/config/users/<user>/clients/<default>
//	/config/users/<user>
//	/config/users/<default>/clients/<client-id>
//	/config/users/<default>/clients/<default>
//	/config/users/<default>
//	/config/clients/<client-id>
//	/config/clients/<default>
//
// ok is false when none sets the key: the client is not limited.
func (t Table) Resolve(key, user, clientID string) (limit float64, rate Key, ok bool) {
	u, c := Named(user), Named(clientID)
	both := Key{User: user, Client: clientID}
	for _, e := range []struct {
		entity Entity
		rate   Key
	}{
		{Entity{User: u, Client: c}, both},
		{Entity{User: u, Client: DefaultName}, both},
		{Entity{User: u}, Key{User: user}},
		{Entity{User: DefaultName, Client: c}, both},
		{Entity{User: DefaultName, Client: DefaultName}, both},
		{Entity{User: DefaultName}, Key{User: user}},
		{Entity{Client: c}, Key{Client: clientID}},
		{Entity{Client: DefaultName}, Key{Client: clientID}},
	} {
		if v, found := t[e.entity][key]; found {
			return v, e.rate, true
		}
	}
	return 0, Key{}, false
}
