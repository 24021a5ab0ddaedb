package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// commitEvent is one sighting of a partition's committed offset: a commit
// a member sent at start and had acknowledged at end, or an OffsetFetch
// sent at start and answered at end.
type commitEvent struct {
	who        string
	start, end time.Time
	offset     int64
}

func (e commitEvent) String() string {
	return fmt.Sprintf("%s of offset %d", e.who, e.offset)
}

// verifyCommits checks the committed offsets of a group's partitions. A
// committed offset is durable once acknowledged (or shown by OffsetFetch,
// which in Kafka shows only commits whose append completed), and the owner
// of a partition in a generation starts from it, so whatever happens after
// a sighting has ended sees the same offset or a later one:
//   - for two sightings a, b of a partition with a.end before b.start,
//     b.offset >= a.offset (no step back, by commits or by fetches);
//   - the final committed offset, read after everything, is >= every
//     sighting (nothing acknowledged was lost).
//
// Sightings that overlap in time are not compared: their order at the
// coordinator is unknown.
func verifyCommits(topic string, events map[int32][]commitEvent, final map[int32]int64) []string {
	var violations []string
	for _, p := range slices.Sorted(maps.Keys(events)) {
		evs := events[p]
		byEnd := slices.SortedFunc(slices.Values(evs), func(a, b commitEvent) int { return a.end.Compare(b.end) })
		byStart := slices.SortedFunc(slices.Values(evs), func(a, b commitEvent) int { return a.start.Compare(b.start) })
		// Sweep the sightings by start, keeping the highest offset of
		// those that ended before: it is the floor for the current one.
		// Sightings below the same floor are one violation (a lost commit
		// shows in every fetch until it is committed over), reported with
		// the first of them and a count.
		var floor *commitEvent
		var below []commitEvent
		report := func() {
			if len(below) == 0 {
				return
			}
			v := fmt.Sprintf("%s-%d: committed offset went back: %v, then %v", topic, p, *floor, below[0])
			if len(below) > 1 {
				v += fmt.Sprintf(" (and %d more sightings below %d after it)", len(below)-1, floor.offset)
			}
			violations = append(violations, v)
			below = nil
		}
		next := 0
		for _, b := range byStart {
			for next < len(byEnd) && byEnd[next].end.Before(b.start) {
				if floor == nil || byEnd[next].offset > floor.offset {
					report()
					floor = &byEnd[next]
				}
				next++
			}
			if floor != nil && b.offset < floor.offset {
				below = append(below, b)
			}
		}
		report()
		top := slices.MaxFunc(evs, func(a, b commitEvent) int { return cmp.Compare(a.offset, b.offset) })
		if got, ok := final[p]; !ok || got < top.offset {
			violations = append(violations, fmt.Sprintf("%s-%d: %v, final committed offset %d (present %v): a commit was lost", topic, p, top, got, ok))
		}
	}
	return violations
}

// TestVerifyCommitsFindsViolations feeds verifyCommits made-up runs, so
// that the group chaos test is known to fail when a coordinator loses a
// commit or shows a committed offset going back.
func TestVerifyCommitsFindsViolations(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(who string, from, to int, offset int64) commitEvent {
		return commitEvent{who, base.Add(time.Duration(from) * time.Second), base.Add(time.Duration(to) * time.Second), offset}
	}
	clean := []commitEvent{
		at("member 1 commit", 0, 1, 10), at("OffsetFetch", 2, 3, 10), at("member 1 commit", 2, 4, 20),
		// Overlapping sightings in either order: not compared.
		at("member 2 commit", 5, 8, 30), at("OffsetFetch", 6, 7, 20),
		at("OffsetFetch", 9, 10, 30),
	}
	tests := []struct {
		name   string
		events []commitEvent
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
		{"member commits below an acknowledged commit", []commitEvent{at("member 1 commit", 0, 1, 50), at("member 2 commit", 2, 3, 40)},
			map[int32]int64{0: 50}, "went back: member 1 commit of offset 50, then member 2 commit of offset 40"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			violations := verifyCommits("chaos", map[int32][]commitEvent{0: tt.events}, tt.final)
			switch {
			case tt.want == "" && len(violations) > 0:
				t.Errorf("violations in a clean run: %v", violations)
			case tt.want != "" && (len(violations) != 1 || !strings.Contains(violations[0], tt.want)):
				t.Errorf("violations %v, want one containing %q", violations, tt.want)
			}
		})
	}
}
