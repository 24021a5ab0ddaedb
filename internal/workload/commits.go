package workload

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// CommitEvent is one sighting of a partition's committed offset: a commit
// a member sent at start and had acknowledged at end, or an OffsetFetch
// sent at start and answered at end.
type CommitEvent struct {
	Who        string
	Start, End time.Time
	Offset     int64
}

func (e CommitEvent) String() string {
	return fmt.Sprintf("%s of offset %d", e.Who, e.Offset)
}

// VerifyCommits checks the committed offsets of a group's partitions. A
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
func VerifyCommits(topic string, events map[int32][]CommitEvent, final map[int32]int64) []string {
	var violations []string
	for _, p := range slices.Sorted(maps.Keys(events)) {
		evs := events[p]
		byEnd := slices.SortedFunc(slices.Values(evs), func(a, b CommitEvent) int { return a.End.Compare(b.End) })
		byStart := slices.SortedFunc(slices.Values(evs), func(a, b CommitEvent) int { return a.Start.Compare(b.Start) })
		// Sweep the sightings by start, keeping the highest offset of
		// those that ended before: it is the floor for the current one.
		// Sightings below the same floor are one violation (a lost commit
		// shows in every fetch until it is committed over), reported with
		// the first of them and a count.
		var floor *CommitEvent
		var below []CommitEvent
		report := func() {
			if len(below) == 0 {
				return
			}
			v := fmt.Sprintf("%s-%d: committed offset went back: %v, then %v", topic, p, *floor, below[0])
			if len(below) > 1 {
				v += fmt.Sprintf(" (and %d more sightings below %d after it)", len(below)-1, floor.Offset)
			}
			violations = append(violations, v)
			below = nil
		}
		next := 0
		for _, b := range byStart {
			for next < len(byEnd) && byEnd[next].End.Before(b.Start) {
				if floor == nil || byEnd[next].Offset > floor.Offset {
					report()
					floor = &byEnd[next]
				}
				next++
			}
			if floor != nil && b.Offset < floor.Offset {
				below = append(below, b)
			}
		}
		report()
		top := slices.MaxFunc(evs, func(a, b CommitEvent) int { return cmp.Compare(a.Offset, b.Offset) })
		if got, ok := final[p]; !ok || got < top.Offset {
			violations = append(violations, fmt.Sprintf("%s-%d: %v, final committed offset %d (present %v): a commit was lost", topic, p, top, got, ok))
		}
	}
	return violations
}
