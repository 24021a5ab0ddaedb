package kafkatools

import (
	"strings"
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// loggerLevels reads kafka-configs --describe of a broker-loggers entity:
// lines "  name=LEVEL sensitive=false synonyms={}".
func loggerLevels(out string) map[string]string {
	levels := map[string]string{}
	for _, line := range harness.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.Contains(f[0], "=") {
			continue
		}
		name, level, _ := strings.Cut(f[0], "=")
		levels[name] = level
	}
	return levels
}

// TestBrokerLoggers changes log levels at runtime with kafka-configs
// --entity-type broker-loggers, as against Kafka.
func TestBrokerLoggers(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	entity := []string{"--bootstrap-server", env.Addr(), "--entity-type", "broker-loggers", "--entity-name", "0"}
	describe := func() (map[string]string, string, string) {
		out, errOut := env.Tool("kafka-configs.sh", append(entity, "--describe")...)
		return loggerLevels(out), out, errOut
	}
	levels, out, errOut := describe()
	if levels["root"] != "INFO" || levels["kafka.log"] != "INFO" || levels["kafka.controller"] != "INFO" {
		env.Fatalf(out, errOut, "--describe: levels %v, want root, kafka.log and kafka.controller at INFO", levels)
	}

	out, errOut = env.Tool("kafka-configs.sh", append(entity, "--alter", "--add-config", "kafka.log=DEBUG,kafka.server=WARN")...)
	if !strings.Contains(out, "Completed updating config") {
		env.Fatalf(out, errOut, "--alter --add-config did not complete")
	}
	levels, out, errOut = describe()
	if levels["kafka.log"] != "DEBUG" || levels["kafka.server"] != "WARN" || levels["kafka.server.ReplicaManager"] != "WARN" || levels["root"] != "INFO" {
		env.Fatalf(out, errOut, "after --add-config: %v; want kafka.log DEBUG, kafka.server and its child WARN", levels)
	}

	env.Tool("kafka-configs.sh", append(entity, "--alter", "--delete-config", "kafka.server")...)
	if levels, out, errOut = describe(); levels["kafka.server"] != "INFO" || levels["kafka.log"] != "DEBUG" {
		env.Fatalf(out, errOut, "after --delete-config kafka.server: %v; want it back at root's INFO", levels)
	}

	// Refusals as Kafka's: a level not in Kafka's list, and root's level
	// removed.
	out, errOut, err := testutil.KafkaTool(t, "kafka-configs.sh", append(entity, "--alter", "--add-config", "kafka.log=VERBOSE")...)
	if err == nil || !strings.Contains(errOut, "InvalidConfigurationException: Cannot set the log level of kafka.log to VERBOSE") {
		env.Errorf(out, errOut, "VERBOSE not refused as Kafka refuses it (err %v)", err)
	}
	out, errOut, err = testutil.KafkaTool(t, "kafka-configs.sh", append(entity, "--alter", "--delete-config", "root")...)
	if err == nil || !strings.Contains(errOut, "InvalidRequestException: Removing the log level of the root logger is not allowed") {
		env.Errorf(out, errOut, "removing root's level not refused as Kafka refuses it (err %v)", err)
	}
	if levels, out, errOut = describe(); levels["kafka.log"] != "DEBUG" || levels["root"] != "INFO" {
		env.Errorf(out, errOut, "a refused alter changed levels: %v", levels)
	}
}
