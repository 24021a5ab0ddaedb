// Package config holds Brook's configuration: one table of definitions
// (Defs) for every broker and topic config, with Kafka 3.9's names, types,
// defaults and validators, that drives
//
//   - parsing server.properties (ParseProperties, Load, FromMap) into the
//     typed Broker view, with unknown keys as warnings and bad values as
//     errors naming key and value;
//   - topic configuration: overrides from the metadata store on top of the
//     broker's defaults (ValidateTopicConfigs, Broker.ValidateTopic,
//     Broker.Topic, Broker.TopicValue), through Kafka's synonym chains such
//     as log.retention.ms > log.retention.minutes > log.retention.hours;
//   - DescribeConfigs answers (Broker.TopicEntries, Broker.BrokerEntries)
//     with Kafka's sources, synonyms, types and flags;
//   - docs/configuration.md (Markdown, written by cmd/brook-configdoc and
//     checked by a test).
//
// Values are kept in Kafka's canonical string form (trimmed, booleans
// lower-case, doubles as Java prints them), the form DescribeConfigs
// returns. Dynamic broker configs (Kafka's /config/brokers/<id> and
// <default>) are layered over the static ones with Broker.WithDynamic,
// after ValidateBrokerUpdate has checked Kafka's update modes.
package config
