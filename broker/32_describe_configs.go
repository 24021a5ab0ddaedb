package broker

// DescribeConfigs, key 32, versions 0-4.
//
// Topics answer every topic config with its effective value, source and
// synonyms (overrides, then the broker's static settings, then Kafka's
// defaults); the broker answers every broker config, sensitive values as
// null. UIs such as kafka-ui and AKHQ break on partial lists, so config
// names filter only when the request names them. v0 reports is_default
// instead of a source, v1 adds synonyms, v3 the type and documentation, v4
// is flexible. A broker resource names this broker's id; the empty name
// is the cluster-wide default resource. A broker logger resource lists
// every logger and its level (broker_loggers.go).

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/controller"
)

func (b *Broker) handleDescribeConfigs(ctx context.Context, _ *request, req *kmsg.DescribeConfigsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		entries, code, msg := b.describeResource(ctx, rr.ResourceType, rr.ResourceName)
		if code != 0 {
			sr.ErrorCode, sr.ErrorMessage = code, &msg
		} else {
			for _, e := range config.EntriesNamed(entries, rr.ConfigNames) {
				sr.Configs = append(sr.Configs, describedConfig(e, req.Version, req.IncludeSynonyms, req.IncludeDocumentation))
			}
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return respond(resp)
}

// describeResource lists a resource's config entries, or why it cannot.
func (b *Broker) describeResource(ctx context.Context, typ kmsg.ConfigResourceType, name string) ([]config.ConfigEntry, int16, string) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if _, ok := b.meta.topic(name); !ok {
			return nil, kerr.UnknownTopicOrPartition.Code, "topic " + name + " does not exist"
		}
		overrides, err := controller.TopicConfigs(ctx, b.store, name)
		if err != nil {
			return nil, kerr.UnknownServerError.Code, err.Error()
		}
		return b.effectiveConfig().TopicEntries(overrides), 0, ""
	case kmsg.ConfigResourceTypeBroker:
		if code, msg := b.checkBrokerResource(name); code != 0 {
			return nil, code, msg
		}
		return b.brokerEntries(name), 0, ""
	case kmsg.ConfigResourceTypeBrokerLogger:
		return b.describeLoggers(name)
	}
	return nil, kerr.InvalidRequest.Code, "unsupported resource type " + strconv.Itoa(int(typ))
}

// checkBrokerResource accepts this broker's id, or the empty name of the
// cluster-wide default resource.
func (b *Broker) checkBrokerResource(name string) (int16, string) {
	if name == "" {
		return 0, ""
	}
	id, err := strconv.Atoi(name)
	if err != nil || int32(id) != b.cfg.BrokerID {
		return kerr.InvalidRequest.Code, "unexpected broker id " + name + ", this is broker " + strconv.Itoa(int(b.cfg.BrokerID))
	}
	return 0, ""
}

func describedConfig(e config.ConfigEntry, version int16, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.ReadOnly, c.IsSensitive = e.Name, e.ReadOnly, e.Sensitive
	c.Value = nullable(e.Value, e.IsNull)
	c.Source = kmsg.ConfigSource(e.Source)
	c.IsDefault = e.Source == config.SourceDefault
	if version >= 3 {
		c.ConfigType = kmsg.ConfigType(e.Type)
		if docs {
			doc := e.Doc
			c.Documentation = &doc
		}
	}
	if synonyms && version >= 1 {
		for _, s := range e.Synonyms {
			cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			cs.Name, cs.Source = s.Name, kmsg.ConfigSource(s.Source)
			cs.Value = nullable(s.Value, s.IsNull || e.Sensitive)
			c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
		}
	}
	return c
}

func nullable(v string, isNull bool) *string {
	if isNull {
		return nil
	}
	return &v
}
