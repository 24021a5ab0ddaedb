package txn

import "testing"

// TestValidTransitions checks the whole transition table against Kafka's
// validPreviousStates, written out pair by pair.
func TestValidTransitions(t *testing.T) {
	E, O, PC, PA, CC, CA, D, PF := StateEmpty, StateOngoing, StatePrepareCommit, StatePrepareAbort, StateCompleteCommit, StateCompleteAbort, StateDead, StatePrepareEpochFence
	valid := map[[2]State]bool{
		{E, E}: true, {CC, E}: true, {CA, E}: true,
		{O, O}: true, {E, O}: true, {CC, O}: true, {CA, O}: true,
		{O, PC}: true,
		{O, PA}: true, {PF, PA}: true, {E, PA}: true, {CC, PA}: true, {CA, PA}: true,
		{PC, CC}: true,
		{PA, CA}: true,
		{E, D}:   true, {CA, D}: true, {CC, D}: true,
		{O, PF}: true,
	}
	all := []State{E, O, PC, PA, CC, CA, D, PF}
	n := 0
	for _, from := range all {
		for _, to := range all {
			if got := validTransition(from, to); got != valid[[2]State{from, to}] {
				t.Errorf("%v -> %v: valid %v, want %v", from, to, got, !got)
			}
			if valid[[2]State{from, to}] {
				n++
			}
		}
	}
	if n != len(valid) {
		t.Fatalf("table has %d valid pairs, counted %d", len(valid), n)
	}
}

func TestStateNames(t *testing.T) {
	for s := StateEmpty; s <= StatePrepareEpochFence; s++ {
		got, ok := StateByName(s.String())
		if !ok || got != s {
			t.Errorf("%d: name %q parses to %v, %v", s, s.String(), got, ok)
		}
	}
	if _, ok := StateByName("Bogus"); ok {
		t.Fatal("unknown name parsed")
	}
	if State(42).String() != "Unknown" {
		t.Fatal("out of range state has a name")
	}
}
