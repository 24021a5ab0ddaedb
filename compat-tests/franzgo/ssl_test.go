package franzgo

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestFranzGoSSL: franz-go with a client certificate on an SSL listener
// that requires one, checking the broker's host name: an admin call
// (create, then list topics), acks=all produce, and a consume.
func TestFranzGoSSL(t *testing.T) {
	env := harness.StartTLS(t, brookBin, nil)
	tlsCfg := &tls.Config{RootCAs: env.CA.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{env.Client.TLSCertificate()}}
	const topic = "franzgo-ssl"
	cl := testutil.Client(t, env.SSLAddr, kgo.DialTLSConfig(tlsCfg), kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	roundTrip(t, cl, topic)
}

// roundTrip checks an admin call (create, then list topics), two acks=all
// produces to topic (cl's default) and their consume, over cl.
func roundTrip(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil || !topics.Has(topic) {
		t.Fatalf("list topics: %v, %v", topics.Names(), err)
	}
	for _, v := range []string{"a", "b"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	var got []string
	for len(got) < 2 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("consumed %q, want [a b]", got)
	}
}
