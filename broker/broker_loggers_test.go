package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeLoggers(tb *testBroker, name string) (map[string]string, int16) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, name
	req.Resources = append(req.Resources, rr)
	req.SetVersion(4)
	res := tb.roundTrip(req).(*kmsg.DescribeConfigsResponse).Resources[0]
	out := map[string]string{}
	for _, c := range res.Configs {
		if c.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig || c.ReadOnly || c.IsSensitive || c.Value == nil {
			tb.t.Errorf("logger %s: source %v read-only %v sensitive %v value %v, want a DYNAMIC_BROKER_LOGGER_CONFIG value", c.Name, c.Source, c.ReadOnly, c.IsSensitive, c.Value)
			continue
		}
		out[c.Name] = *c.Value
	}
	return out, res.ErrorCode
}

type loggerOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func alterLoggers(tb *testBroker, name string, validateOnly bool, ops ...loggerOp) int16 {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = o.name, o.op, o.value
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	return tb.roundTrip(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
}

// TestBrokerLoggerResource follows Kafka's RuntimeLoggerManager: describe
// lists every logger, SET and DELETE change levels at runtime, and each
// refusal has Kafka's error code, with nothing of the request applied.
func TestBrokerLoggerResource(t *testing.T) {
	tb := startBroker(t, nil)
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	str := func(s string) *string { return &s }

	levels, code := describeLoggers(tb, "0")
	if code != 0 || levels["root"] != "INFO" || levels["kafka.log"] != "INFO" || levels["kafka.coordinator.group"] != "INFO" || levels["kafka.controller"] != "INFO" {
		t.Fatalf("describe: code %d, levels %v", code, levels)
	}
	if code := alterLoggers(tb, "0", false, loggerOp{"kafka.log", set, str("DEBUG")}, loggerOp{"root", set, str("WARN")}); code != 0 {
		t.Fatalf("SET: code %d", code)
	}
	levels, _ = describeLoggers(tb, "0")
	if levels["kafka.log"] != "DEBUG" || levels["root"] != "WARN" || levels["kafka.controller"] != "WARN" {
		t.Fatalf("after SET: %v", levels)
	}
	if code := alterLoggers(tb, "0", false, loggerOp{"kafka.log", del, nil}); code != 0 {
		t.Fatalf("DELETE: code %d", code)
	}
	if levels, _ = describeLoggers(tb, "0"); levels["kafka.log"] != "WARN" {
		t.Fatalf("after DELETE kafka.log inherits %q, want root's WARN", levels["kafka.log"])
	}

	for _, c := range []struct {
		what     string
		resource string
		ops      []loggerOp
		want     int16
	}{
		{"unknown logger", "0", []loggerOp{{"kafka.log", set, str("ERROR")}, {"no.such.logger", set, str("DEBUG")}}, kerr.InvalidConfig.Code},
		{"lower-case level", "0", []loggerOp{{"kafka.log", set, str("debug")}}, kerr.InvalidConfig.Code},
		{"root DELETE", "0", []loggerOp{{"root", del, nil}}, kerr.InvalidRequest.Code},
		{"APPEND", "0", []loggerOp{{"kafka.log", kmsg.IncrementalAlterConfigOpAppend, str("DEBUG")}}, kerr.InvalidRequest.Code},
		{"null SET", "0", []loggerOp{{"kafka.log", set, nil}}, kerr.InvalidRequest.Code},
		{"other broker", "7", []loggerOp{{"kafka.log", set, str("DEBUG")}}, kerr.InvalidRequest.Code},
		{"empty name", "", []loggerOp{{"kafka.log", set, str("DEBUG")}}, kerr.InvalidRequest.Code},
	} {
		if got := alterLoggers(tb, c.resource, false, c.ops...); got != c.want {
			t.Errorf("%s: code %d, want %d", c.what, got, c.want)
		}
	}
	if levels, _ = describeLoggers(tb, "0"); levels["kafka.log"] != "WARN" {
		t.Errorf("a refused request changed kafka.log to %s", levels["kafka.log"])
	}
	if code := alterLoggers(tb, "0", true, loggerOp{"kafka.log", set, str("TRACE")}); code != 0 {
		t.Errorf("validate-only SET: code %d", code)
	}
	if levels, _ = describeLoggers(tb, "0"); levels["kafka.log"] != "WARN" {
		t.Errorf("validate-only SET changed kafka.log to %s", levels["kafka.log"])
	}
	if _, code := describeLoggers(tb, ""); code != kerr.InvalidRequest.Code {
		t.Errorf("describe with an empty name: code %d, want INVALID_REQUEST", code)
	}
}
