package replica

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestISRProperties runs random sequences of appends, follower fetches,
// clock ticks, shrink checks and controller answers against a leader, and
// checks the replication invariants after every step:
//   - the HW never moves backwards and never passes the leader's LEO;
//   - every member of the committed ISR and of a proposed ISR has
//     everything below the HW (the records acks=all acknowledged);
//   - the ISR holds the leader and only assigned replicas;
//   - once every member of the maximal ISR fetched at the LEO, the HW is
//     the LEO (the HW is not held back for no reason).
func TestISRProperties(t *testing.T) {
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 7))
		f := newFixture(t, leaderState())
		accept := true
		f.cluster.answer = nil
		followerLEO := map[int32]int64{2: -1, 3: -1}
		var prevHW int64
		for step := range 150 {
			switch r.IntN(6) {
			case 0:
				f.produce(1 + r.IntN(3))
			case 1, 2:
				id := int32(2 + r.IntN(2))
				leo := f.p.Log().LogEndOffset()
				from := max(followerLEO[id], 0)
				off := from + r.Int64N(leo-from+1)
				followerLEO[id] = off
				f.fetch(id, off)
			case 3:
				f.clock.Advance(time.Duration(r.IntN(8)) * time.Second)
				f.p.maybeShrinkISR()
			case 4:
				accept = r.IntN(3) > 0
				if accept {
					f.cluster.answer = nil
				} else {
					f.cluster.answer = refuseAll(kerr.InvalidUpdateVersion.Code)
				}
				f.m.sendISRChanges(context.Background())
			case 5:
				// Everyone in the maximal ISR catches up.
				f.p.mu.Lock()
				members := maximalISR(f.p.isr, f.p.proposedISR)
				f.p.mu.Unlock()
				leo := f.p.Log().LogEndOffset()
				for _, id := range members {
					if id != 1 {
						followerLEO[id] = leo
						f.fetch(id, leo)
					}
				}
				f.p.mu.Lock()
				same := slices.Equal(members, maximalISR(f.p.isr, f.p.proposedISR))
				f.p.mu.Unlock()
				if hw := f.p.HighWatermark(); same && hw != leo {
					t.Fatalf("seed %d step %d: every ISR member at LEO %d, HW %d", seed, step, leo, hw)
				}
			}
			hw := f.p.HighWatermark()
			leo := f.p.Log().LogEndOffset()
			f.p.mu.Lock()
			isr, proposed := slices.Clone(f.p.isr), slices.Clone(f.p.proposedISR)
			f.p.mu.Unlock()
			if hw < prevHW || hw > leo {
				t.Fatalf("seed %d step %d: HW %d after %d, LEO %d", seed, step, hw, prevHW, leo)
			}
			prevHW = hw
			if !slices.Contains(isr, 1) {
				t.Fatalf("seed %d step %d: leader left the ISR %v", seed, step, isr)
			}
			for _, id := range maximalISR(isr, proposed) {
				if id == 1 {
					continue
				}
				if !slices.Contains([]int32{2, 3}, id) {
					t.Fatalf("seed %d step %d: ISR %v holds a non-replica", seed, step, isr)
				}
				if have := max(followerLEO[id], 0); have < hw {
					t.Fatalf("seed %d step %d: HW %d but ISR member %d has only %d (ISR %v, proposed %v)", seed, step, hw, id, have, isr, proposed)
				}
			}
		}
	}
}
