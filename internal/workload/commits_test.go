package workload

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestVerifyCommitsFindsViolations feeds VerifyCommits made-up runs, so
// that the group chaos tests are known to fail when a coordinator loses a
// commit or shows a committed offset going back.
func TestVerifyCommitsFindsViolations(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(who string, from, to int, offset int64) CommitEvent {
		return CommitEvent{who, base.Add(time.Duration(from) * time.Second), base.Add(time.Duration(to) * time.Second), offset}
	}
	clean := []CommitEvent{
		at("member 1 commit", 0, 1, 10), at("OffsetFetch", 2, 3, 10), at("member 1 commit", 2, 4, 20),
		// Overlapping sightings in either order: not compared.
		at("member 2 commit", 5, 8, 30), at("OffsetFetch", 6, 7, 20),
		at("OffsetFetch", 9, 10, 30),
	}
	tests := []struct {
		name   string
		events []CommitEvent
		final  map[int32]int64
		want   string // a substring of the one expected violation, "" for none
	}{
		{"clean run", clean, map[int32]int64{0: 30}, ""},
		{"clean run, committed further at the end", clean, map[int32]int64{0: 35}, ""},
		{"acknowledged commit lost at the end", clean, map[int32]int64{0: 20}, "member 2 commit of offset 30, final committed offset 20"},
		{"partition missing at the end", clean, map[int32]int64{}, "final committed offset 0 (present false)"},
		{"fetch shows a step back", append(slices.Clone(clean), at("OffsetFetch", 11, 12, 20), at("member 2 commit", 13, 14, 40)),
			map[int32]int64{0: 40}, "went back: member 2 commit of offset 30, then OffsetFetch of offset 20"},
		{"a lost commit, seen by fetch after fetch", append(slices.Clone(clean), at("OffsetFetch", 11, 12, 20), at("OffsetFetch", 13, 14, 20), at("OffsetFetch", 15, 16, 20)),
			map[int32]int64{0: 30}, "then OffsetFetch of offset 20 (and 2 more sightings below 30 after it)"},
		{"member commits below an acknowledged commit", []CommitEvent{at("member 1 commit", 0, 1, 50), at("member 2 commit", 2, 3, 40)},
			map[int32]int64{0: 50}, "went back: member 1 commit of offset 50, then member 2 commit of offset 40"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			violations := VerifyCommits("chaos", map[int32][]CommitEvent{0: tt.events}, tt.final)
			switch {
			case tt.want == "" && len(violations) > 0:
				t.Errorf("violations in a clean run: %v", violations)
			case tt.want != "" && (len(violations) != 1 || !strings.Contains(violations[0], tt.want)):
				t.Errorf("violations %v, want one containing %q", violations, tt.want)
			}
		})
	}
}
