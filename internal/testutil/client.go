package testutil

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Client returns a franz-go client seeded with brokers (host:port,...)
// plus opts, closed when the test ends.
func Client(t testing.TB, brokers string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(strings.Split(brokers, ",")...)}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatalf("new franz-go client for %s: %v", brokers, err)
	}
	t.Cleanup(cl.Close)
	return cl
}
