package txn

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestRandomOperationsKeepInvariants drives one shard with random client
// requests, timeouts, expiry, marker completions and append failures, and
// checks after every step that:
//   - no id stays pending once its appends are done (requests of
//     transaction version 1 and 2 mixed);
//   - an id's (producer id, epoch) never goes backwards;
//   - Ongoing and Prepare* have partitions (but a TV2 abort may have
//     none), the other states none;
//   - replaying the committed records gives exactly the in-memory state,
//     which is what a new coordinator loads after a failover.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	seen := map[State]bool{}
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		h := newHarness(t)
		ids := []string{"a", "b", "c"}
		type pe struct {
			pid   int64
			epoch int16
		}
		last := map[string]pe{}
		parts := []TopicPartition{foo0, foo1, tp("bar", 3)}
		for step := 0; step < 300; step++ {
			id := ids[r.IntN(len(ids))]
			m := h.s.txns[id]
			pid, epoch := int64(-1), int16(-1)
			if m != nil {
				pid, epoch = m.producerID, m.epoch
				if r.IntN(5) == 0 {
					epoch-- // a zombie producer
				}
			}
			switch r.IntN(11) {
			case 0:
				h.initPending(id, int32(1000+r.IntN(5000)), -1, -1)
			case 1:
				h.initPending(id, 2000, pid, epoch)
			case 2, 3:
				h.addPending(id, pid, epoch, parts[r.IntN(len(parts))])
			case 4:
				h.endPending(id, pid, epoch, r.IntN(2) == 0)
			case 5:
				h.now = h.now.Add(time.Duration(r.IntN(4000)) * time.Millisecond)
				h.run(func(eff *effects) { h.s.tick(h.now, r.IntN(3) == 0, eff) })
			case 6:
				h.finishMarkers()
			case 7:
				h.now = h.now.Add(2 * time.Hour)
			case 8:
				// A leader's add for a TV2 producer (AddPartitionsToTxn v4+).
				tp := parts[r.IntN(len(parts))]
				h.run(func(eff *effects) {
					h.s.addPartitions(id, pid, epoch, []TopicPartition{tp}, TV2, h.now, eff, func(int16) {})
				})
			case 9, 10:
				// EndTxn v5, sometimes a retry with the epoch before the bump.
				if r.IntN(3) == 0 {
					epoch--
				}
				h.endV2Pending(id, pid, epoch, r.IntN(2) == 0)
			}
			if r.IntN(2) == 0 {
				var err error
				if r.IntN(6) == 0 {
					err = errAppend
				}
				h.complete(err)
			}
			if len(h.writes) > 0 {
				continue
			}
			for id, m := range h.s.txns {
				seen[m.state] = true
				if m.pending {
					t.Fatalf("seed %d step %d: %s pending with no append queued", seed, step, id)
				}
				if m.epoch >= 0 {
					p := last[id]
					if m.producerID == p.pid && m.epoch < p.epoch {
						t.Fatalf("seed %d step %d: %s epoch went back from %d to %d", seed, step, id, p.epoch, m.epoch)
					}
					last[id] = pe{m.producerID, m.epoch}
				}
				hasParts := len(m.partitions) > 0
				wantParts := m.state == StateOngoing || m.state == StatePrepareCommit || m.state == StatePrepareAbort
				// A TV2 producer may abort a transaction without partitions.
				emptyAbort := m.state == StatePrepareAbort && m.clientTV >= TV2
				if hasParts != wantParts && !(emptyAbort && !hasParts) {
					t.Fatalf("seed %d step %d: %s in %v with partitions %v", seed, step, id, m.state, m.partitions)
				}
			}
			checkReplay(t, h)
		}
	}
	for _, st := range allStates {
		if !seen[st] {
			t.Errorf("no run reached %v", st)
		}
	}
}

// checkReplay loads the committed records and compares them with the
// shard. Ids created by an InitProducerId whose append failed exist only
// in memory with no epoch, as in Kafka; they are skipped.
func checkReplay(t *testing.T, h *harness) {
	t.Helper()
	l := loader{txns: map[string]snapshot{}}
	for _, r := range h.written {
		id, s, _, err := decodeRecord(r.key, r.value)
		if err != nil {
			t.Fatal(err)
		}
		if s == nil {
			delete(l.txns, id)
		} else {
			l.txns[id] = *s
		}
	}
	for id, m := range h.s.txns {
		s, ok := l.txns[id]
		if !ok {
			if m.epoch != noProducerEpoch && !m.fenceFailed {
				t.Fatalf("%s in memory (%+v) but not in the log", id, m.snapshot)
			}
			continue
		}
		got := m.snapshot
		if m.fenceFailed {
			// A failed fence bumped only the in-memory epoch.
			got.epoch, got.lastEpoch = s.epoch, s.lastEpoch
		}
		// The value does not carry the last epoch, as in Kafka.
		got.lastEpoch = s.lastEpoch
		if got.producerID != s.producerID || got.epoch != s.epoch || got.state != s.state || got.timeoutMs != s.timeoutMs ||
			got.lastProducerID != s.lastProducerID || got.nextProducerID != s.nextProducerID || got.clientTV != s.clientTV ||
			got.startMs != s.startMs || got.lastUpdateMs != s.lastUpdateMs || !slices.Equal(got.partitions, s.partitions) {
			t.Fatalf("%s: memory %+v, log %+v", id, m.snapshot, s)
		}
	}
	for id := range l.txns {
		if h.s.txns[id] == nil {
			t.Fatalf("%s in the log but not in memory", id)
		}
	}
}
