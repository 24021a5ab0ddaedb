package pending

import (
	"context"
	"testing"
)

func TestPollThenWait(t *testing.T) {
	p := New(-1)
	if _, ok := p.Poll(); ok {
		t.Fatal("answered before its answer")
	}
	p.Reply() <- 7
	if r, ok := p.Poll(); !ok || r != 7 {
		t.Fatalf("poll = %d %v, want 7 true", r, ok)
	}
	if r := p.Wait(context.Background()); r != 7 {
		t.Fatalf("wait after poll = %d, want 7", r)
	}
}

func TestWaitCancelled(t *testing.T) {
	p := New(-1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := p.Wait(ctx); r != -1 {
		t.Fatalf("cancelled wait = %d, want -1", r)
	}
	// The step's later answer still fits and is kept.
	p.Answer(3)
	if r, ok := p.Poll(); !ok || r != 3 {
		t.Fatalf("poll after the late answer = %d %v", r, ok)
	}
}

func TestAnswered(t *testing.T) {
	if r, ok := Answered(5).Poll(); !ok || r != 5 {
		t.Fatalf("answered = %d %v", r, ok)
	}
}
