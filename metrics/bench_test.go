package metrics

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"time"
)

// fakeSource is a broker with n partitions over n/100 topics, all led
// here, and one group committed on every partition.
type fakeSource struct {
	topics []string
	n      int
}

func newFakeSource(n int) *fakeSource {
	s := &fakeSource{n: n}
	for i := range n / 100 {
		s.topics = append(s.topics, fmt.Sprintf("topic-%03d", i))
	}
	return s
}

func (s *fakeSource) ReplicaCounts() ReplicaCounts {
	return ReplicaCounts{Partitions: s.n, Leaders: s.n}
}
func (s *fakeSource) ControllerCounts() ControllerCounts {
	return ControllerCounts{Active: true, GlobalPartitions: s.n, GlobalTopics: len(s.topics)}
}
func (s *fakeSource) EachLog(fn func(*LogStats)) {
	var l LogStats
	for i := range s.n {
		l = LogStats{Topic: s.topics[i/100], Partition: int32(i % 100), Size: 1 << 20, EndOffset: 1000, Segments: 1}
		fn(&l)
	}
}
func (s *fakeSource) Groups(buf []GroupOffset) (GroupCounts, []GroupOffset) {
	for i := range s.n {
		buf = append(buf, GroupOffset{Group: "g", Topic: s.topics[i/100], Partition: int32(i % 100), Offset: 900, Lag: 100})
	}
	return GroupCounts{Groups: 1, Stable: 1, Offsets: s.n}, buf
}

// BenchmarkScrape10kPartitions serves /metrics for a broker of 10,000
// partitions (4 log series and 2 consumer-group series each) and 100
// topics with traffic.
func BenchmarkScrape10kPartitions(b *testing.B) {
	r := New(newFakeSource(10000), time.Now)
	for i := range 100 {
		r.Topics.Produced(fmt.Sprintf("topic-%03d", i), 100, 1)
	}
	for k := range int16(20) {
		r.Requests.Completed(r.Requests.Received(k, 0, false), time.Millisecond)
	}
	h := r.Handler(false)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if rec.Code != 200 {
			b.Fatalf("status %d", rec.Code)
		}
		size = rec.Body.Len()
		io.Discard.Write(rec.Body.Bytes())
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}
