package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/quota"
)

func alterQuotaEntry(entity map[string]*string, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, typ := range []string{"user", "client-id", "ip", "bogus"} {
		if name, ok := entity[typ]; ok {
			ee := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ee.Type, ee.Name = typ, name
			e.Entity = append(e.Entity, ee)
		}
	}
	e.Ops = ops
	return e
}

func quotaOp(key string, value float64, remove bool) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, remove
	return op
}

func TestAlterClientQuotas(t *testing.T) {
	tb := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := tb.client()
	alter := func(validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []kmsg.AlterClientQuotasResponseEntry {
		t.Helper()
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Entries, req.ValidateOnly = entries, validateOnly
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("AlterClientQuotas: %v", err)
		}
		if len(resp.Entries) != len(entries) {
			t.Fatalf("%d entries answered, want %d", len(resp.Entries), len(entries))
		}
		return resp.Entries
	}
	alice, app, name := kmsg.StringPtr("alice"), kmsg.StringPtr("app"), kmsg.StringPtr("x")
	for i, e := range alter(false,
		alterQuotaEntry(map[string]*string{"user": alice}, quotaOp("producer_byte_rate", 1048576, false), quotaOp("request_percentage", 200, false)),
		alterQuotaEntry(map[string]*string{"user": alice, "client-id": app}, quotaOp("consumer_byte_rate", 2097152, false)),
		alterQuotaEntry(map[string]*string{"client-id": nil}, quotaOp("producer_byte_rate", 5000, false)),
		// Invalid entries fail alone.
		alterQuotaEntry(map[string]*string{}, quotaOp("producer_byte_rate", 1, false)),
		alterQuotaEntry(map[string]*string{"bogus": name}, quotaOp("producer_byte_rate", 1, false)),
		alterQuotaEntry(map[string]*string{"user": name}, quotaOp("no_such_quota", 1, false)),
		alterQuotaEntry(map[string]*string{"user": name}, quotaOp("producer_byte_rate", 1.5, false)),
	) {
		want := kerr.InvalidRequest.Code
		if i < 3 {
			want = 0
		}
		if e.ErrorCode != want {
			t.Errorf("entry %d: error %d (%v), want %d", i, e.ErrorCode, e.ErrorMessage, want)
		}
	}
	// validate_only writes nothing.
	if e := alter(true, alterQuotaEntry(map[string]*string{"user": name}, quotaOp("producer_byte_rate", 7, false))); e[0].ErrorCode != 0 {
		t.Fatalf("validate only: %d", e[0].ErrorCode)
	}

	got, err := controller.ClientQuotas(ctx, tb.b.store)
	if err != nil {
		t.Fatal(err)
	}
	want := quota.Table{
		{User: quota.Named("alice")}:                             {"producer_byte_rate": 1048576, "request_percentage": 200},
		{User: quota.Named("alice"), Client: quota.Named("app")}: {"consumer_byte_rate": 2097152},
		{Client: quota.DefaultName}:                              {"producer_byte_rate": 5000},
	}
	if !quotaTablesEqual(got, want) {
		t.Fatalf("stored quotas %v, want %v", got, want)
	}
	// Kafka's ZooKeeper format, which Kafka's own brokers read.
	raw, _, err := tb.b.store.Get(ctx, "/config/users/alice")
	if err != nil || string(raw) != `{"version":1,"config":{"producer_byte_rate":"1048576","request_percentage":"200.0"}}` {
		t.Errorf("/config/users/alice = %s, %v", raw, err)
	}

	// Removing keeps the other keys.
	alter(false, alterQuotaEntry(map[string]*string{"user": alice}, quotaOp("request_percentage", 0, true)))
	cfg, err := controller.EntityConfigs(ctx, tb.b.store, "users", "alice")
	if err != nil || len(cfg) != 1 || cfg["producer_byte_rate"] != "1048576" {
		t.Errorf("after remove: %v %v", cfg, err)
	}
}

func quotaTablesEqual(a, b quota.Table) bool {
	if len(a) != len(b) {
		return false
	}
	for e, qa := range a {
		qb, ok := b[e]
		if !ok || len(qa) != len(qb) {
			return false
		}
		for k, v := range qa {
			if w, ok := qb[k]; !ok || w != v {
				return false
			}
		}
	}
	return true
}

func TestDescribeClientQuotasFilters(t *testing.T) {
	tb := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := tb.b.store
	rate := func(v string) map[string]*string { return map[string]*string{"producer_byte_rate": &v} }
	for e, v := range map[quota.Entity]string{
		{User: quota.Named("alice")}:                             "1",
		{User: quota.Named("alice"), Client: quota.Named("app")}: "2",
		{User: quota.DefaultName}:                                "3",
		{Client: quota.DefaultName}:                              "4",
		{Client: quota.Named("app")}:                             "5",
	} {
		if err := controller.AlterClientQuota(ctx, st, e, rate(v)); err != nil {
			t.Fatal(err)
		}
	}
	describe := func(strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) []float64 {
		t.Helper()
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components, req.Strict = comps, strict
		resp, err := req.RequestWith(ctx, tb.client())
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("describe: %v %d", err, resp.ErrorCode)
		}
		var out []float64
		for _, e := range resp.Entries {
			out = append(out, e.Values[0].Value)
		}
		slices.Sort(out)
		return out
	}
	comp := func(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = typ, match, name
		return c
	}
	for _, tc := range []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   []float64
	}{
		{"user alice", false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, kmsg.StringPtr("alice"))}, []float64{1, 2}},
		{"user alice strict", true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, kmsg.StringPtr("alice"))}, []float64{1}},
		{"default user", true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, nil)}, []float64{3}},
		{"null name is the default", true, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", 0, nil)}, []float64{4}},
		{"any client", false, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", 2, nil)}, []float64{2, 5}},
		{"pair", true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, kmsg.StringPtr("alice")), comp("client-id", 0, kmsg.StringPtr("app"))}, []float64{2}},
		{"all", false, nil, []float64{1, 2, 3, 4, 5}},
	} {
		if got := describe(tc.strict, tc.comps...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
