package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/brook-mq/brook/controller/store"
)

// Run takes part in controller election until ctx is done or the store
// session ends (returned as store.ErrSessionExpired). While elected it runs
// the controller; it resigns when ctx is done, when the session ends, or
// when another controller fences it.
func (c *Controller) Run(ctx context.Context) error {
	defer c.activeID.Store(-1)
	for {
		if ctx.Err() != nil {
			return nil
		}
		won, ch, err := c.tryElect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("controller election: %w", err)
		}
		if !won {
			select {
			case <-ctx.Done():
				return nil
			case ev := <-ch:
				if ev.Type == store.EventNotWatching {
					return fmt.Errorf("controller election: %w", ev.Err)
				}
			}
			continue
		}
		err = c.runActive(ctx)
		c.resign(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, store.ErrSessionExpired):
			return fmt.Errorf("controller: %w", err)
		case errors.Is(err, errLostControl):
			c.log.Info("resigned as controller", "reason", err)
		default:
			// Pause before standing again, so that a persistent store error
			// does not turn into a hot loop of elections.
			c.log.Error("controller failed; resigning", "err", err)
			t := time.NewTimer(FailureBackoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}
}

// tryElect creates /controller and bumps /controller_epoch in one
// transaction, as Kafka's registerControllerAndIncrementControllerEpoch
// does. Losers get a watch on /controller to wait for it to go.
func (c *Controller) tryElect(ctx context.Context) (bool, <-chan store.Event, error) {
	exists, _, ch, err := c.st.ExistsW(ctx, ControllerPath)
	if err != nil {
		return false, nil, err
	}
	if exists {
		data, _, err := c.st.Get(ctx, ControllerPath)
		if errors.Is(err, store.ErrNoNode) {
			return false, ch, nil // gone already; the watch fires
		}
		if err != nil {
			return false, nil, err
		}
		id, err := decodeController(data)
		if err != nil {
			return false, nil, err
		}
		c.activeID.Store(id)
		return false, ch, nil
	}
	c.activeID.Store(-1)
	data, stat, err := c.st.Get(ctx, ControllerEpochPath)
	if errors.Is(err, store.ErrNoNode) {
		// Kafka's initial controller epoch is 0; the first controller is 1.
		if _, err := c.st.Create(ctx, ControllerEpochPath, []byte("0"), 0); err != nil && !errors.Is(err, store.ErrNodeExists) {
			return false, nil, err
		}
		data, stat, err = c.st.Get(ctx, ControllerEpochPath)
	}
	if err != nil {
		return false, nil, err
	}
	epoch, err := decodeControllerEpoch(data)
	if err != nil {
		return false, nil, err
	}
	epoch++
	err = c.st.Multi(ctx,
		store.CreateOp{Path: ControllerPath, Data: encodeController(c.cfg.BrokerID, c.cfg.Now().UnixMilli()), Flags: store.Ephemeral},
		store.SetOp{Path: ControllerEpochPath, Data: []byte(strconv.Itoa(int(epoch))), Version: stat.Version},
	)
	if errors.Is(err, store.ErrNodeExists) || errors.Is(err, store.ErrBadVersion) {
		return false, ch, nil // another broker won; the watch tells us when it goes
	}
	if err != nil {
		return false, nil, err
	}
	c.state = c.newState(epoch)
	c.epochZkVersion = stat.Version + 1
	c.prevEpoch, c.prevEpochZxid = epoch-1, stat.Mzxid
	c.activeID.Store(c.cfg.BrokerID)
	c.mu.Lock()
	c.active.Store(true)
	c.mu.Unlock()
	c.log.Info("elected controller", "broker", c.cfg.BrokerID, "epoch", epoch)
	return true, nil, nil
}

// resign stops the broker channels, forgets the state, and, if this
// session still owns /controller, deletes it so another broker takes over
// without waiting for the session to expire.
func (c *Controller) resign(ctx context.Context) {
	c.mu.Lock()
	c.active.Store(false)
	calls := c.pending.calls
	c.pending = pendingEvents{}
	c.mu.Unlock()
	for _, f := range calls {
		f(ctx, false)
	}
	c.activeID.Store(-1)
	for id, bc := range c.channels {
		bc.stop()
		delete(c.channels, id)
	}
	c.term++ // the term's watches fire no more
	c.state, c.deletions, c.loopErr = nil, nil, nil
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, stat, err := c.st.Get(cctx, ControllerPath); err == nil && stat.EphemeralOwner == c.st.SessionID() {
		if err := c.st.Delete(cctx, ControllerPath, stat.Version); err != nil && !errors.Is(err, store.ErrNoNode) {
			c.log.Warn("delete controller znode on resignation", "err", err)
		}
	}
}
