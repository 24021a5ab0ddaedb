package broker

import (
	"testing"
	"time"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/quota"
)

// The per-request cost of request_percentage on the hot path: what the
// connection adds to every request, without any request quota set and
// with one that applies to the client.
func BenchmarkRequestQuota(b *testing.B) {
	for _, tc := range []struct {
		name  string
		table quota.Table
	}{
		{"none", nil},
		{"set", quota.Table{quota.Entity{User: quota.DefaultName}: {quota.RequestPercentage: 1e9}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			br := &Broker{requestQuota: quota.NewManager(quota.RequestPercentage, quota.Config{MaxThrottle: time.Second})}
			br.requestQuota.SetTable(tc.table)
			r := &request{clientID: "bench", principal: auth.Principal{Type: "User", Name: "alice"}, start: time.Now()}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				// What the connection adds after each handler returns.
				if d := br.recordRequestTime(r, time.Since(r.start)); d != 0 {
					b.Fatalf("throttled %v", d)
				}
			}
		})
	}
}
