package quota

import (
	"fmt"
	"math"
	"net"
	"slices"
)

// Keys are the client quota keys a user or client-id entity takes.
var Keys = []string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}

// EntityPart is one (type, name) of an AlterClientQuotas or
// DescribeClientQuotas entity; a nil name is the default entity.
type EntityPart struct {
	Type string
	Name *string
}

// ParseEntity checks an AlterClientQuotas entity as Kafka's ZooKeeper
// mode does: at most one user and one client-id, or one ip (an address,
// or the default) alone. The error is Kafka's message, sent with
// INVALID_REQUEST.
func ParseEntity(parts []EntityPart) (Entity, error) {
	if len(parts) == 0 {
		return Entity{}, fmt.Errorf("Invalid empty client quota entity")
	}
	var e Entity
	for _, p := range parts {
		var dst *Name
		switch p.Type {
		case "user":
			dst = &e.User
		case "client-id":
			dst = &e.Client
		case "ip":
			dst = &e.IP
			if p.Name != nil && net.ParseIP(*p.Name) == nil {
				return Entity{}, fmt.Errorf("%s is not a valid IP or resolvable host.", *p.Name)
			}
		default:
			return Entity{}, fmt.Errorf("Unhandled client quota entity type: %s", p.Type)
		}
		if dst.Set {
			return Entity{}, fmt.Errorf("Duplicate %s found in entity", p.Type)
		}
		*dst = DefaultName
		if p.Name != nil {
			*dst = Named(*p.Name)
		}
	}
	if e.IP.Set && (e.User.Set || e.Client.Set) {
		return Entity{}, fmt.Errorf("Invalid quota entity combination, IP entity should not be used with user/client ID entity.")
	}
	return e, nil
}

// ValidateEntityOp is ValidateOp for the keys of e's type: an ip entity
// takes only connection_creation_rate, a whole number (Kafka's INT; the
// message names the type as Kafka prints ConfigDef.Type).
func ValidateEntityOp(e Entity, key string, value float64, remove bool) error {
	if !e.IP.Set {
		return ValidateOp(key, value, remove)
	}
	if key != ConnectionCreationRate {
		return fmt.Errorf("Invalid configuration key %s", key)
	}
	if !remove && (value != math.Trunc(value) || value < math.MinInt32 || value > math.MaxInt32) {
		return fmt.Errorf("Configuration %s must be a INT value", key)
	}
	return nil
}

// longKeys are the quota keys Kafka types LONG; the others are DOUBLE.
var longKeys = []string{ProducerByteRate, ConsumerByteRate}

// ValidateOp checks one quota setting as Kafka's DynamicConfig.Client
// does: a known key, and a whole number for the byte rates. Removals
// only need a known key.
func ValidateOp(key string, value float64, remove bool) error {
	if !slices.Contains(Keys, key) {
		return fmt.Errorf("Invalid configuration key %s", key)
	}
	if remove {
		return nil
	}
	if slices.Contains(longKeys, key) && (value != math.Trunc(value) || math.IsInf(value, 0) || math.Abs(value) > math.MaxInt64) {
		return fmt.Errorf("Configuration %s must be a LONG value", key)
	}
	if math.IsNaN(value) {
		return fmt.Errorf("Configuration %s must be a Double value", key)
	}
	return nil
}

// FormatValue is how a quota is written in ZooKeeper: a byte rate or a
// connection rate as a whole number ("1048576"), the others as Java
// prints a double ("200.0").
func FormatValue(key string, value float64) string {
	if slices.Contains(longKeys, key) || key == ConnectionCreationRate {
		return fmt.Sprintf("%d", int64(value))
	}
	if value == math.Trunc(value) && math.Abs(value) < 1e7 {
		return fmt.Sprintf("%.1f", value)
	}
	return fmt.Sprint(value)
}
