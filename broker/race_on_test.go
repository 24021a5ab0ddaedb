//go:build race

package broker

// raceEnabled: the race detector's instrumentation adds allocations that
// allocation bounds allow for.
const raceEnabled = true
