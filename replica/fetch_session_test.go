package replica

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestFetchSessionHandler steps the follower's side of KIP-227, as Kafka's
// FetchSessionHandler: full fetches until the leader gives a session, then
// only added and changed partitions, with the ones left out forgotten; an
// error starts over with a full fetch.
func TestFetchSessionHandler(t *testing.T) {
	p := func(name string, part int32, offset int64) sessionFetchPartition {
		return sessionFetchPartition{key: sessionPartitionKey{topic: name, partition: part}, data: sessionPartitionData{fetchOffset: offset}}
	}
	keys := func(ps []sessionFetchPartition) []sessionPartitionKey {
		var out []sessionPartitionKey
		for _, x := range ps {
			out = append(out, x.key)
		}
		return out
	}
	a0, a1, b0 := p("a", 0, 0).key, p("a", 1, 0).key, p("b", 0, 0).key
	type step struct {
		name        string
		next        []sessionFetchPartition
		wantID      int32
		wantEpoch   int32
		wantSend    []sessionPartitionKey
		wantForget  []sessionPartitionKey
		respError   int16
		respSession int32
		netError    bool
	}
	steps := []step{
		{name: "first is full", next: []sessionFetchPartition{p("a", 0, 0), p("a", 1, 0)}, wantID: 0, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0, a1}, respSession: 0},
		{name: "no session given: full again", next: []sessionFetchPartition{p("a", 0, 0), p("a", 1, 0)}, wantID: 0, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0, a1}, respSession: 7},
		{name: "incremental, nothing changed", next: []sessionFetchPartition{p("a", 0, 0), p("a", 1, 0)}, wantID: 7, wantEpoch: 1, respSession: 7},
		{name: "a changed offset and an added partition", next: []sessionFetchPartition{p("a", 0, 5), p("a", 1, 0), p("b", 0, 0)}, wantID: 7, wantEpoch: 2,
			wantSend: []sessionPartitionKey{a0, b0}, respSession: 7},
		{name: "a partition left out is forgotten", next: []sessionFetchPartition{p("a", 0, 5), p("b", 0, 0)}, wantID: 7, wantEpoch: 3,
			wantForget: []sessionPartitionKey{a1}, respSession: 7, respError: kerr.InvalidFetchSessionEpoch.Code},
		{name: "after an error: full, closing the session", next: []sessionFetchPartition{p("a", 0, 5), p("b", 0, 0)}, wantID: 7, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0, b0}, respSession: 8},
		{name: "new session", next: []sessionFetchPartition{p("a", 0, 5), p("b", 0, 0)}, wantID: 8, wantEpoch: 1, netError: true},
		{name: "after a network error: full, closing the session", next: []sessionFetchPartition{p("a", 0, 5)}, wantID: 8, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0}, respSession: 9},
		{name: "session 9", next: []sessionFetchPartition{p("a", 0, 5)}, wantID: 9, wantEpoch: 1,
			respError: kerr.FetchSessionIDNotFound.Code},
		{name: "after an unknown session: a new full session", next: []sessionFetchPartition{p("a", 0, 5)}, wantID: 0, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0}},
	}
	var h fetchSessionHandler
	for _, s := range steps {
		id, epoch, send, forget := h.build(s.next)
		if id != s.wantID || epoch != s.wantEpoch || !slices.Equal(keys(send), s.wantSend) || !slices.Equal(forget, s.wantForget) {
			t.Fatalf("%s: built session %d epoch %d send %v forget %v; want %d %d %v %v",
				s.name, id, epoch, keys(send), forget, s.wantID, s.wantEpoch, s.wantSend, s.wantForget)
		}
		if s.netError {
			h.handleError()
		} else {
			h.handleResponse(s.respError, s.respSession)
		}
	}
}
