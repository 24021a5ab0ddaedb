package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/brook-mq/brook/controller/store"
)

// watchNotifications re-arms the children watch on a notification path
// brokers write sequential nodes under (/log_dir_event_notification,
// /isr_change_notification), creating the path when missing, and returns
// the notifications named prefix<seq> there, oldest first. mark records
// the watch's firing for the loop.
func (c *Controller) watchNotifications(ctx context.Context, path, prefix string, mark func(p *pendingEvents)) ([]string, error) {
	children, _, ch, err := c.st.ChildrenW(ctx, path)
	if errors.Is(err, store.ErrNoNode) {
		if _, err := c.st.Create(ctx, path, nil, 0); err != nil && !errors.Is(err, store.ErrNodeExists) {
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
		children, _, ch, err = c.st.ChildrenW(ctx, path)
	}
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	c.forward(ctx, ch, mark)
	var out []string
	for _, n := range children {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}
