package controller

import (
	"math/rand/v2"
	"time"
)

// Options tunes the broker-side helpers (CreateTopics, RegisterBroker, ...).
// The zero value gives Kafka's defaults.
type Options struct {
	Now func() time.Time
	// Rand picks the start index and shift of replica assignment; tests fix it.
	Rand *rand.Rand
	// DefaultNumPartitions is num.partitions, used for NumPartitions -1 (default 1).
	DefaultNumPartitions int32
	// DefaultReplicationFactor is default.replication.factor, used for
	// ReplicationFactor -1 (default 1).
	DefaultReplicationFactor int16
	// ValidateConfigs checks a topic's config overrides; an error becomes
	// INVALID_CONFIG with the error's text.
	ValidateConfigs func(topic string, cfg map[string]string) error
}

// Option changes Options.
type Option func(*Options)

// WithNow injects the clock used for timestamps in znodes.
func WithNow(now func() time.Time) Option { return func(o *Options) { o.Now = now } }

// WithRand injects the random source of replica assignment.
func WithRand(r *rand.Rand) Option { return func(o *Options) { o.Rand = r } }

// WithDefaults sets num.partitions and default.replication.factor.
func WithDefaults(numPartitions int32, replicationFactor int16) Option {
	return func(o *Options) {
		o.DefaultNumPartitions = numPartitions
		o.DefaultReplicationFactor = replicationFactor
	}
}

// WithConfigValidator sets the topic config validator.
func WithConfigValidator(v func(topic string, cfg map[string]string) error) Option {
	return func(o *Options) { o.ValidateConfigs = v }
}

func resolveOptions(opts []Option) Options {
	o := Options{DefaultNumPartitions: 1, DefaultReplicationFactor: 1}
	for _, f := range opts {
		f(&o)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return o
}
