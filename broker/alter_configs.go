package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/controller"
)

// configChange is one config of an AlterConfigs (always a set: the legacy
// API replaces the whole set) or IncrementalAlterConfigs request.
type configChange struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

// alterResource applies changes to one resource and returns the Kafka error
// code and message. replace is the legacy AlterConfigs semantics: configs
// not named go back to their defaults.
func (b *Broker) alterResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, changes []configChange, replace, validateOnly bool) (int16, string) {
	seen := map[string]bool{}
	for _, c := range changes {
		if seen[c.name] {
			return kerr.InvalidRequest.Code, "duplicate config " + c.name
		}
		seen[c.name] = true
	}
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return b.alterTopicConfigs(ctx, name, changes, replace, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		return b.alterBrokerConfigs(ctx, name, changes, replace, validateOnly)
	case kmsg.ConfigResourceTypeBrokerLogger:
		return b.alterLoggers(name, changes, replace, validateOnly)
	}
	return kerr.InvalidRequest.Code, fmt.Sprintf("unsupported resource type %d", typ)
}

func (b *Broker) alterTopicConfigs(ctx context.Context, topic string, changes []configChange, replace, validateOnly bool) (int16, string) {
	if _, ok := b.meta.topic(topic); !ok {
		return kerr.UnknownTopicOrPartition.Code, "topic " + topic + " does not exist"
	}
	current, err := controller.TopicConfigs(ctx, b.store, topic)
	if err != nil {
		return kerr.UnknownServerError.Code, err.Error()
	}
	next := map[string]string{}
	if !replace {
		next = maps.Clone(current)
		if next == nil {
			next = map[string]string{}
		}
	}
	eff := b.effectiveConfig()
	for _, c := range changes {
		effective := func() string { return eff.TopicValue(current, c.name) }
		if code, msg := applyConfigChange(next, effective, c); code != 0 {
			return code, msg
		}
	}
	if err := eff.ValidateTopic(next); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	if validateOnly {
		return 0, ""
	}
	if err := controller.SetTopicConfig(ctx, b.store, topic, next); err != nil {
		return kerr.UnknownServerError.Code, err.Error()
	}
	// Apply here at once too: the watch may lag, and a client that alters
	// then describes on this broker expects to see its change.
	b.topics.set(topic, next)
	b.replicas.UpdateConfig(topic)
	return 0, ""
}

// applyConfigChange applies one change to next. APPEND and SUBTRACT work on
// list configs only, starting from the effective value, as Kafka's do.
func applyConfigChange(next map[string]string, effective func() string, c configChange) (int16, string) {
	switch c.op {
	case kmsg.IncrementalAlterConfigOpSet:
		if c.value == nil {
			return kerr.InvalidRequest.Code, "null value for config " + c.name
		}
		next[c.name] = *c.value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(next, c.name)
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		if !isListConfig(c.name) {
			return kerr.InvalidConfig.Code, "config " + c.name + " is not a list; APPEND and SUBTRACT need one"
		}
		if c.value == nil {
			return kerr.InvalidRequest.Code, "null value for config " + c.name
		}
		list := splitList(effective())
		for _, v := range splitList(*c.value) {
			has := slices.Contains(list, v)
			if c.op == kmsg.IncrementalAlterConfigOpAppend && !has {
				list = append(list, v)
			}
			if c.op == kmsg.IncrementalAlterConfigOpSubtract && has {
				list = slices.DeleteFunc(list, func(s string) bool { return s == v })
			}
		}
		next[c.name] = strings.Join(list, ",")
	default:
		return kerr.InvalidRequest.Code, fmt.Sprintf("unknown config operation %d", c.op)
	}
	return 0, ""
}

func isListConfig(name string) bool {
	for _, d := range config.Defs() {
		if d.Name == name {
			return d.Type == config.List
		}
	}
	return false
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
