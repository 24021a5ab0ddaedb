package config

import (
	"fmt"
	"slices"
	"strings"
)

// Environment variables name configs the way the common Kafka container
// images do, so that a compose file written for one of them works:
//
//   - KAFKA_CFG_<NAME> (Bitnami's images): the rest lower-cased, each "_"
//     a ".": KAFKA_CFG_LOG_DIRS is log.dirs.
//   - KAFKA_<NAME> (the apache/kafka and Confluent images): lower-cased,
//     "___" a "-", "__" a "_" and "_" a ".": KAFKA_ADVERTISED_LISTENERS is
//     advertised.listeners. The images' own variables (KAFKA_HEAP_OPTS,
//     KAFKA_OPTS, KAFKA_JMX_*, KAFKA_LOG4J_*, ...) are not configs and are
//     left out, as those images leave them out.
//
// Brook's own configs follow the same rule: KAFKA_CFG_BROOK_METRICS_LISTENER
// is brook.metrics.listener. When both forms name one config, KAFKA_CFG_
// wins.

// envNotConfigs are KAFKA_ variables the Kafka images use for themselves.
var envNotConfigs = []string{
	"KAFKA_HOME", "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS",
	"KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
	"KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_OPTS", "KAFKA_JMX_PORT", "KAFKA_JMX_HOSTNAME", "KAFKA_DEBUG",
	"KAFKA_DEBUG_SUSPEND_FLAG", "KAFKA_LOG_DIR", "KAFKA_CLUSTER_ID", "KAFKA_ZOOKEEPER_SSL_CLIENT_ENABLE",
}

// EnvName is the config an environment variable names, and whether it
// names one.
func EnvName(variable string) (string, bool) {
	if rest, ok := strings.CutPrefix(variable, "KAFKA_CFG_"); ok {
		return strings.ReplaceAll(strings.ToLower(rest), "_", "."), rest != ""
	}
	rest, ok := strings.CutPrefix(variable, "KAFKA_")
	if !ok || rest == "" || slices.Contains(envNotConfigs, variable) || strings.HasPrefix(variable, "KAFKA_JMX_") || strings.HasPrefix(variable, "KAFKA_LOG4J_") {
		return "", false
	}
	name := strings.ToLower(rest)
	name = strings.ReplaceAll(name, "___", "\x00")
	name = strings.ReplaceAll(name, "__", "\x01")
	name = strings.ReplaceAll(name, "_", ".")
	name = strings.ReplaceAll(name, "\x00", "-")
	return strings.ReplaceAll(name, "\x01", "_"), true
}

// FromEnv turns environ ("NAME=value" entries, as os.Environ gives) into
// key=value overrides, sorted by key so that the result is the same
// whatever the order of environ.
func FromEnv(environ []string) []string {
	values := map[string]string{}
	cfg := map[string]bool{} // set by a KAFKA_CFG_ variable
	for _, kv := range environ {
		variable, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		name, ok := EnvName(variable)
		if !ok {
			continue
		}
		isCfg := strings.HasPrefix(variable, "KAFKA_CFG_")
		if cfg[name] && !isCfg {
			continue
		}
		values[name], cfg[name] = value, cfg[name] || isCfg
	}
	out := make([]string, 0, len(values))
	for name, value := range values {
		out = append(out, fmt.Sprintf("%s=%s", name, value))
	}
	slices.Sort(out)
	return out
}
