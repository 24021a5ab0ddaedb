package controller

import (
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
	// RegistrationWait is how long RegisterBroker waits for a registration
	// owned by another session to expire before calling it a clash (zero:
	// not at all).
	RegistrationWait time.Duration
	// Logger says why RegisterBroker waits; nil discards.
	Logger *slog.Logger
	// RecordMutation, when set, counts the partitions a topic creation,
	// partition addition or deletion is about to mutate against the
	// client's controller_mutation_rate (KIP-599), after the validation
	// and before the write; an error refuses that topic with
	// THROTTLING_QUOTA_EXCEEDED and the error's text.
	RecordMutation func(partitions int) error
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

// WithRegistrationWait makes RegisterBroker wait up to d for a lingering
// registration of its id to expire, logging to logger why it waits.
func WithRegistrationWait(d time.Duration, logger *slog.Logger) Option {
	return func(o *Options) { o.RegistrationWait, o.Logger = d, logger }
}

// WithConfigValidator sets the topic config validator.
func WithConfigValidator(v func(topic string, cfg map[string]string) error) Option {
	return func(o *Options) { o.ValidateConfigs = v }
}

// WithMutationQuota sets RecordMutation.
func WithMutationQuota(record func(partitions int) error) Option {
	return func(o *Options) { o.RecordMutation = record }
}

// recordMutation applies RecordMutation, if any.
func (o Options) recordMutation(partitions int) *codeError {
	if o.RecordMutation == nil {
		return nil
	}
	if err := o.RecordMutation(partitions); err != nil {
		return errCode(kerr.ThrottlingQuotaExceeded, "%s", err.Error())
	}
	return nil
}

func resolveOptions(opts []Option) Options {
	o := Options{DefaultNumPartitions: 1, DefaultReplicationFactor: 1}
	for _, f := range opts {
		f(&o)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return o
}
