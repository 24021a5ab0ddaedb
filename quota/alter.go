package quota

import (
	"fmt"
	"math"
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
// mode does: at most one user and one client-id, nothing else. The error
// is Kafka's message, sent with INVALID_REQUEST.
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
	return e, nil
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
		return fmt.Errorf("Configuration %s must be a Long value", key)
	}
	if math.IsNaN(value) {
		return fmt.Errorf("Configuration %s must be a Double value", key)
	}
	return nil
}

// FormatValue is how a quota is written in ZooKeeper: a byte rate as a
// long ("1048576"), the others as Java prints a double ("200.0").
func FormatValue(key string, value float64) string {
	if slices.Contains(longKeys, key) {
		return fmt.Sprintf("%d", int64(value))
	}
	if value == math.Trunc(value) && math.Abs(value) < 1e7 {
		return fmt.Sprintf("%.1f", value)
	}
	return fmt.Sprint(value)
}
