package auth

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/internal/testutil"
)

// Change notifications older than 15 minutes are purged by the brokers
// watching them, as Kafka's ZkNodeChangeNotificationListener does on each
// round of notifications; younger ones, and the ACLs, stay.
func TestACLChangesPurged(t *testing.T) {
	clock := testutil.NewClock(time.UnixMilli(1_700_000_000_000))
	db, err := store.Open(store.Options{Dir: t.TempDir(), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a1, a2 := NewAuthorizer(nil, false), NewAuthorizer(nil, false)
	s1 := NewACLSync(db.NewSession(), a1, slog.Default())
	s2 := NewACLSync(db.NewSession(), a2, slog.Default())
	for _, s := range []*ACLSync{s1, s2} {
		s.now = clock.Now
		if err := s.Load(ctx); err != nil {
			t.Fatal(err)
		}
		go s.Watch(ctx)
	}
	raw := db.NewSession()
	children := func() []string {
		var all []string
		for _, p := range []string{LiteralACLChangesPath, ExtendedACLChangesPath} {
			cs, _, err := raw.Children(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				all = append(all, p+"/"+c)
			}
		}
		slices.Sort(all)
		return all
	}
	add := func(topic string) {
		t.Helper()
		if err := s1.Add(ctx, []Binding{
			{lit(ResourceTopic, topic), allow("User:alice", "*", OpRead)},
			{pre(ResourceGroup, topic), allow("User:alice", "*", OpRead)},
		}); err != nil {
			t.Fatal(err)
		}
	}
	seen := func(topic string) func() error {
		return func() error {
			if !a2.Authorize(User("alice"), "h", OpRead, ResourceTopic, topic) || !a2.Authorize(User("alice"), "h", OpRead, ResourceGroup, topic+"-g") {
				return fmt.Errorf("acls of %s not seen on the other broker", topic)
			}
			return nil
		}
	}
	add("old")
	testutil.Eventually(t, 20*time.Second, seen("old"))
	old := children()
	if len(old) != 2 {
		t.Fatalf("notifications %v, want one on each path", old)
	}
	// 14 minutes on, a new change purges nothing.
	clock.Advance(14 * time.Minute)
	add("mid")
	testutil.Eventually(t, 20*time.Second, seen("mid"))
	if got := children(); len(got) != 4 {
		t.Fatalf("notifications %v after 14 minutes, want all 4", got)
	}
	// 16 minutes after the first: the next change purges the first two.
	clock.Advance(2 * time.Minute)
	add("new")
	testutil.Eventually(t, 20*time.Second, func() error {
		if err := seen("new")(); err != nil {
			return err
		}
		got := children()
		if len(got) != 4 || slices.Contains(got, old[0]) || slices.Contains(got, old[1]) {
			return fmt.Errorf("notifications %v, want the two oldest of 6 purged", got)
		}
		return nil
	})
	if err := seen("old")(); err != nil {
		t.Errorf("purging notifications lost acls: %v", err)
	}
}
