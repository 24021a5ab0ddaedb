package group

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// checkInvariants verifies the bookkeeping the state machine keeps beside
// its members against a recount.
func checkInvariants(g *group) error {
	awaiting := 0
	supported := map[string]int{}
	for id, m := range g.members {
		if m.id != id {
			return fmt.Errorf("member %s stored under %s", m.id, id)
		}
		if m.awaitingJoin() {
			awaiting++
		}
		for _, p := range m.protocols {
			supported[p.name]++
		}
		if m.instanceID != "" && g.static[m.instanceID] != id {
			return fmt.Errorf("static map lost %s -> %s", m.instanceID, id)
		}
	}
	if awaiting != g.numAwaitingJoin {
		return fmt.Errorf("numAwaitingJoin %d, recount %d", g.numAwaitingJoin, awaiting)
	}
	for name, n := range g.supported {
		if supported[name] != n {
			return fmt.Errorf("protocol %s supported by %d, recount %d", name, n, supported[name])
		}
	}
	for inst, id := range g.static {
		if m := g.members[id]; m == nil || m.instanceID != inst {
			return fmt.Errorf("static %s -> %s not a member", inst, id)
		}
	}
	if len(g.memberOrder) != len(g.members) {
		return fmt.Errorf("member order has %d, members %d", len(g.memberOrder), len(g.members))
	}
	if (g.leader == "") != (len(g.members) == 0) {
		return fmt.Errorf("leader %q with %d members", g.leader, len(g.members))
	}
	if g.leader != "" && g.members[g.leader] == nil {
		return fmt.Errorf("leader %s not a member", g.leader)
	}
	for id := range g.pendingSync {
		if g.members[id] == nil {
			return fmt.Errorf("pending sync %s not a member", id)
		}
	}
	for id := range g.pending {
		if g.members[id] != nil {
			return fmt.Errorf("pending %s is also a member", id)
		}
	}
	switch g.state {
	case StateEmpty:
		if len(g.members) != 0 {
			return fmt.Errorf("Empty with %d members", len(g.members))
		}
	case StateStable, StateCompletingRebalance:
		if g.protocolName == "" {
			return fmt.Errorf("%v without a protocol", g.state)
		}
	}
	return nil
}

// client is one simulated consumer in the property test.
type client struct {
	instance string
	memberID string
	gen      int32
	join     chan joinResult
	sync     chan syncResult
}

// TestRandomOperationsKeepInvariants drives the state machine with random
// joins, syncs, heartbeats, leaves, write completions and clock jumps, and
// checks after every step that the bookkeeping is consistent and that no
// request is answered twice; at the end, with clients gone quiet and time
// run out, every outstanding request must have been answered.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	for seed := uint64(0); seed < 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomRun(t, seed) })
	}
}

func randomRun(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	l := testLimits()
	l.maxGroupSize = 4
	if r.IntN(2) == 0 {
		l.initialRebalanceDelay = 2 * time.Second
	}
	h := newHarness(t, l)
	clients := make([]*client, 6)
	for i := range clients {
		clients[i] = &client{gen: -1}
		if i%2 == 0 {
			clients[i].instance = fmt.Sprintf("inst-%d", i)
		}
	}
	answered := func(c *client) {
		// A second answer to the same request would sit in the
		// channel's spare slot.
		if c.join != nil {
			select {
			case res := <-c.join:
				if len(c.join) != 0 {
					t.Fatalf("seed %d: join answered twice", seed)
				}
				c.join = nil
				if res.err == 0 || res.memberID != "" {
					c.memberID = res.memberID
				}
				if res.err == 0 {
					c.gen = res.generation
				}
			default:
			}
		}
		if c.sync != nil {
			select {
			case <-c.sync:
				if len(c.sync) != 0 {
					t.Fatalf("seed %d: sync answered twice", seed)
				}
				c.sync = nil
			default:
			}
		}
	}
	for step := 0; step < 400; step++ {
		c := clients[r.IntN(len(clients))]
		switch op := r.IntN(10); {
		case op < 3 && c.join == nil:
			a := joinArgs{
				groupID: "g", memberID: c.memberID, instanceID: c.instance, clientID: "c",
				requireKnownMemberID: r.IntN(2) == 0,
				rebalanceTimeout:     time.Duration(5+r.IntN(20)) * time.Second,
				sessionTimeout:       time.Duration(3+r.IntN(10)) * time.Second,
				protocolType:         "consumer",
				protocols:            []protocol{{name: []string{"range", "sticky"}[r.IntN(2)], metadata: []byte{byte(r.IntN(2))}}, {name: "range"}},
			}
			c.join = make(chan joinResult, 2)
			a.waiter = c.join
			if r.IntN(5) == 0 {
				a.memberID = "" // a restart
			}
			h.run(func(eff *effects) { h.s.join(a, h.now, eff) })
		case op < 5 && c.sync == nil && c.memberID != "":
			c.sync = make(chan syncResult, 2)
			a := syncArgs{groupID: "g", generation: c.gen, memberID: c.memberID, instanceID: c.instance, waiter: c.sync}
			if g := h.group(); g != nil && r.IntN(2) == 0 {
				a.assignments = map[string][]byte{}
				for id := range g.members {
					a.assignments[id] = []byte(id)
				}
			}
			h.run(func(eff *effects) { h.s.sync(a, h.now, eff) })
		case op < 6 && c.memberID != "":
			h.s.heartbeat("g", c.memberID, c.instance, c.gen, h.now)
		case op < 7 && c.memberID != "":
			h.run(func(eff *effects) {
				h.s.leave("g", []leavingMember{{memberID: c.memberID, instanceID: c.instance}}, h.now, eff)
			})
		case op < 8:
			var err error
			if r.IntN(4) == 0 {
				err = ErrNotLeader
			}
			h.completeWrites(err)
		default:
			h.advance(time.Duration(r.IntN(4000)) * time.Millisecond)
		}
		for _, c := range clients {
			answered(c)
		}
		if g := h.group(); g != nil {
			if err := checkInvariants(g); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
	}
	// Quiet clients and enough time: every request gets its answer.
	for i := 0; i < 30; i++ {
		h.completeWrites(nil)
		h.advance(time.Minute)
	}
	for i, c := range clients {
		answered(c)
		if c.join != nil || c.sync != nil {
			t.Fatalf("seed %d: client %d still waiting (join %v, sync %v); group %+v", seed, i, c.join != nil, c.sync != nil, h.group())
		}
	}
	if g := h.group(); g != nil {
		if err := checkInvariants(g); err != nil {
			t.Fatal(err)
		}
		if g.state != StateEmpty {
			t.Fatalf("seed %d: silent group ends %v with %d members", seed, g.state, len(g.members))
		}
	}
}
