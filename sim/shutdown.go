package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
)

// Controlled shutdown, a fault of the faulty phase: the broker asks the
// controller it knows to move its leaderships away (ControlledShutdown,
// served by the real ClusterState.OnControlledShutdown and the driver's
// execute), retries while partitions remain or the request fails, as
// broker.controlledShutdown does (controlled.shutdown.max.retries 3, the
// backoff shortened to 500 ms), then stops cleanly: its logs are closed
// with the clean-shutdown marker and its ZooKeeper session is closed, so
// its registration goes at once. The broker keeps serving meanwhile.
//
// Invariant, besides those the run checks anyway: when the controller
// answers that no partition remains, ZooKeeper names the broker neither
// leader nor in-sync replica of any partition with other replicas.

const (
	controlledShutdownMaxRetries   = 3
	controlledShutdownRetryBackoff = 500 * time.Millisecond
	// controllerRequestTimeout is controller.socket.timeout.ms, shortened.
	controllerRequestTimeout = time.Second
)

// controlledShutdown starts broker b's controlled shutdown; it restarts
// after restartAfter.
func (b *Broker) controlledShutdown(restartAfter time.Duration) {
	if !b.up || b.shuttingDown {
		return
	}
	b.shuttingDown = true
	b.c.sched.Tracef("broker %d controlled shutdown begins", b.id)
	b.shutdownAttempt(b.incarnation, 0, restartAfter)
}

func (b *Broker) shutdownAttempt(inc, attempt int, restartAfter time.Duration) {
	c := b.c
	if !b.live(inc) {
		return
	}
	if attempt == controlledShutdownMaxRetries {
		c.sched.Tracef("broker %d controlled shutdown did not complete; stopping anyway", b.id)
		b.stopCleanly(restartAfter)
		return
	}
	done := false
	again := func() {
		if done {
			return
		}
		done = true
		c.sched.After(controlledShutdownRetryBackoff, fmt.Sprintf("broker %d controlled shutdown retry", b.id), func() {
			b.shutdownAttempt(inc, attempt+1, restartAfter)
		})
	}
	c.sched.After(controllerRequestTimeout, "~controlled shutdown timeout", func() {
		if b.live(inc) {
			again()
		}
	})
	target := b.knownController
	if target < 0 {
		return // no controller known: the timeout retries
	}
	req := kmsg.NewPtrControlledShutdownRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 3, b.id, b.brokerEpoch
	tb := c.brokers[target-1]
	tinc := tb.incarnation
	c.net.Send(b.id, target, "ControlledShutdown", func() {
		if !tb.live(tinc) {
			return
		}
		resp, ok := tb.serveControlledShutdown(req)
		if !ok {
			return // the loop was blocked: the request times out
		}
		c.net.Send(target, b.id, "ControlledShutdown answer", func() {
			if !b.live(inc) || done {
				return
			}
			if resp.ErrorCode == 0 && len(resp.PartitionsRemaining) == 0 {
				done = true
				c.sched.Tracef("broker %d controlled shutdown complete", b.id)
				b.stopCleanly(restartAfter)
				return
			}
			c.sched.Tracef("broker %d controlled shutdown: error %d, %d partitions remain", b.id, resp.ErrorCode, len(resp.PartitionsRemaining))
			again()
		})
	})
}

// serveControlledShutdown is the real controller's ControlledShutdown;
// false: no answer (the event loop is blocked on the store).
func (tb *Broker) serveControlledShutdown(req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, bool) {
	if tb.ctrl == nil {
		resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp, true
	}
	resp, ok := tb.ctrl.controlledShutdown(req)
	if ok && resp.ErrorCode == 0 && len(resp.PartitionsRemaining) == 0 {
		if s := tb.ctrl.state(); s != nil {
			tb.c.checkShutdownDone(req.BrokerID, s)
		}
	}
	return resp, ok
}

// checkShutdownDone: the partition states just written leave id no
// leadership and no ISR membership where another replica could take over.
func (c *Cluster) checkShutdownDone(id int32, state *controller.ClusterState) {
	t := state.Topics[topic]
	if t == nil {
		return
	}
	for part := range c.numParts() {
		if len(t.Replicas[part]) <= 1 {
			continue
		}
		ps, ok := c.inv.storedState(part)
		if !ok {
			continue
		}
		if ps.Leader == id || slices.Contains(ps.ISR, id) {
			c.fail("controlled shutdown of broker %d complete, but ZooKeeper has p%d led by %d with ISR %v", id, part, ps.Leader, ps.ISR)
			return
		}
	}
}

// stopCleanly is the end of a clean shutdown: the session is closed (the
// registration and, on the controller, /controller go at once), the logs
// are closed with the clean-shutdown marker.
func (b *Broker) stopCleanly(restartAfter time.Duration) {
	if !b.up {
		return
	}
	c := b.c
	c.sched.Tracef("broker %d stops cleanly", b.id)
	c.shutdowns++
	b.halt()
	if err := b.sess.Close(); err != nil {
		c.fail("broker %d: close zk session: %v", b.id, err)
	}
	if err := b.logs.Close(); err != nil {
		c.fail("broker %d: close logs: %v", b.id, err)
	}
	if c.quiet {
		restartAfter = 0 // every broker is up for the quiet phase
	}
	c.sched.After(restartAfter, fmt.Sprintf("restart broker %d", b.id), b.start)
}
