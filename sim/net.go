package sim

import (
	"fmt"
	"strings"
	"time"
)

// NetConfig shapes the simulated inter-broker network.
type NetConfig struct {
	MinDelay, MaxDelay time.Duration
	Drop               float64 // probability a message is lost
	Duplicate          float64 // probability a delivered message arrives twice
}

// Net is the inter-broker transport: each message is delivered after its
// own random delay (so messages reorder), or dropped, or delivered twice;
// a partition between two nodes drops everything between them until heal.
// Node -1 is ZooKeeper's side of a partition (see Cluster).
type Net struct {
	sched *Scheduler
	cfg   NetConfig
	cut   map[[2]int32]bool
}

// NewNet returns a network with every link up.
func NewNet(s *Scheduler, cfg NetConfig) *Net {
	return &Net{sched: s, cfg: cfg, cut: map[[2]int32]bool{}}
}

func link(a, b int32) [2]int32 {
	if a > b {
		a, b = b, a
	}
	return [2]int32{a, b}
}

// Partition cuts the link between a and b (both ways).
func (n *Net) Partition(a, b int32) {
	n.cut[link(a, b)] = true
	n.sched.Tracef("net: partition %d | %d", a, b)
}

// Heal restores every link.
func (n *Net) Heal() {
	clear(n.cut)
	n.sched.Tracef("net: heal")
}

// Reachable reports whether a and b can talk now.
func (n *Net) Reachable(a, b int32) bool { return a == b || !n.cut[link(a, b)] }

// Send delivers a message from one node to another: deliver runs at the
// destination after the network's delay, unless the message is lost. A
// partition is checked when the message arrives, as a packet in flight
// is lost with the link. Messages to oneself are never lost.
func (n *Net) Send(from, to int32, what string, deliver func()) {
	if from == to {
		n.sched.After(0, fmt.Sprintf("%slocal %s %d", routine(what), what, to), deliver)
		return
	}
	if n.sched.Chance(n.cfg.Drop) {
		if routine(what) == "" {
			n.sched.Tracef("net: drop %s %d->%d", what, from, to)
		}
		return
	}
	copies := 1
	if n.sched.Chance(n.cfg.Duplicate) {
		copies = 2
	}
	for range copies {
		n.sched.After(n.sched.Between(n.cfg.MinDelay, n.cfg.MaxDelay), fmt.Sprintf("%sdeliver %s %d->%d", routine(what), what, from, to), func() {
			if n.Reachable(from, to) {
				deliver()
			}
		})
	}
}

// RoundTrip decides the fate of a synchronous call (a seam that returns its
// answer in the same step, such as replica.Cluster.AlterPartition): whether
// the request arrived, and whether its answer came back. Delay does not
// apply; the call is atomic in virtual time.
func (n *Net) RoundTrip(from, to int32) (arrived, answered bool) {
	if from == to {
		return true, true
	}
	if !n.Reachable(from, to) || n.sched.Chance(n.cfg.Drop) {
		return false, false
	}
	return true, !n.sched.Chance(n.cfg.Drop)
}

// routine marks the high-volume messages (fetches) as routine events.
func routine(what string) string {
	if strings.HasPrefix(what, "Fetch") || strings.HasPrefix(what, "Produce") || strings.HasPrefix(what, "OffsetForLeaderEpoch") {
		return "~"
	}
	return ""
}
