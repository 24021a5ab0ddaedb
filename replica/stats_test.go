package replica

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestISRChangesCounted: ISR shrinks and expands count once the
// controller accepts them, as Kafka's IsrShrinksPerSec and
// IsrExpandsPerSec; a refused change counts nothing.
func TestISRChangesCounted(t *testing.T) {
	f := newFixture(t, leaderState())
	count := func(wantShrinks, wantExpands uint64) {
		t.Helper()
		if s, e := f.m.ISRChanges(); s != wantShrinks || e != wantExpands {
			t.Fatalf("ISR changes: %d shrinks, %d expands; want %d, %d (ISR %v)", s, e, wantShrinks, wantExpands, f.p.State().ISR)
		}
	}
	count(0, 0)
	f.clock.Advance(lagMax + time.Second)
	f.p.maybeShrinkISR()
	count(0, 0) // proposed, not accepted yet
	if !f.m.sendISRChanges(context.Background()) {
		t.Fatal("shrink not sent")
	}
	if isr := f.p.State().ISR; !slices.Equal(isr, []int32{1}) {
		t.Fatalf("ISR %v after the shrink", isr)
	}
	count(1, 0)

	leo := f.p.Log().LogEndOffset()
	f.cluster.answer = refuseAll(kerr.IneligibleReplica.Code)
	f.fetch(2, leo)
	f.m.sendISRChanges(context.Background())
	count(1, 0)
	f.cluster.answer = nil
	f.fetch(2, leo)
	f.m.sendISRChanges(context.Background())
	if isr := f.p.State().ISR; !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v after the expansion", isr)
	}
	count(1, 1)
}
