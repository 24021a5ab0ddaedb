package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's per-broker listener configs go through IncrementalAlterConfigs
// for a broker id, also in their listener-prefixed form, and DescribeConfigs
// shows them as dynamic broker configs.
func TestDynamicListenerConfigs(t *testing.T) {
	tb := startBroker(t, nil)
	ctx := testContext(t)
	adm := tb.admin()
	alter := func(name, value, broker string) error {
		var res kadm.AlterConfigsResponses
		var err error
		cfg := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}}
		if broker == "" {
			res, err = adm.AlterBrokerConfigs(ctx, cfg)
		} else {
			res, err = adm.AlterBrokerConfigs(ctx, cfg, 0)
		}
		if err == nil {
			err = resourceErr(res.On(broker, nil))
		}
		return err
	}
	for _, c := range []struct{ name, value string }{
		{"sasl.kerberos.min.time.before.relogin", "120000"},
		{"listener.name.plaintext.ssl.keystore.location", "/etc/brook/ks.jks"},
	} {
		if err := alter(c.name, c.value, "0"); err != nil {
			t.Fatalf("set %s for broker 0: %v", c.name, err)
		}
	}
	// The store configs change only per listener; per-broker configs not
	// at the cluster default level.
	if err := alter("ssl.keystore.location", "/etc/brook/ks.jks", "0"); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("ssl.keystore.location without a listener prefix: %v, want INVALID_CONFIG", err)
	}
	if err := alter("sasl.kerberos.min.time.before.relogin", "1", ""); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("per-broker config at the cluster default: %v, want INVALID_CONFIG", err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kadm.Config{}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			got[c.Key] = c
		}
	}
	for name, want := range map[string]string{
		"sasl.kerberos.min.time.before.relogin":         "120000",
		"listener.name.plaintext.ssl.keystore.location": "/etc/brook/ks.jks",
	} {
		c, ok := got[name]
		if !ok {
			t.Errorf("%s missing from DescribeConfigs", name)
		} else if c.MaybeValue() != want || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
			t.Errorf("%s = %q from %v, want %s from the dynamic broker config", name, c.MaybeValue(), c.Source, want)
		}
	}
}
