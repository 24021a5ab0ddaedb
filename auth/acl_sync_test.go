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

func openStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Kafka's exact bytes for the nodes: the resource znode's JSON and the
// two change notification formats.
func TestACLZooKeeperFormat(t *testing.T) {
	es := []Entry{allow("User:alice", "*", OpRead), deny("User:bob", "10.0.0.1", OpIdempotentWrite)}
	got := string(EncodeEntries(es))
	want := `{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},{"principal":"User:bob","permissionType":"Deny","operation":"IdempotentWrite","host":"10.0.0.1"}]}`
	if got != want {
		t.Fatalf("entries:\n got %s\nwant %s", got, want)
	}
	back, err := DecodeEntries([]byte(want))
	if err != nil || !slices.Equal(back, es) {
		t.Fatalf("decode: %v %v", back, err)
	}
	cases := []struct {
		r          Resource
		path, note string
	}{
		{lit(ResourceTopic, "t"), "/kafka-acl/Topic/t", "TOPIC:t"},
		{lit(ResourceTransactionalID, "tx"), "/kafka-acl/TransactionalId/tx", "TRANSACTIONAL_ID:tx"},
		{lit(ResourceCluster, ClusterName), "/kafka-acl/Cluster/kafka-cluster", "CLUSTER:kafka-cluster"},
		{pre(ResourceGroup, "g-"), "/kafka-acl-extended/prefixed/Group/g-", `{"version":1,"resourceType":"GROUP","name":"g-","patternType":"PREFIXED"}`},
	}
	for _, c := range cases {
		if p := ResourcePath(c.r); p != c.path {
			t.Errorf("%v: path %s, want %s", c.r, p, c.path)
		}
		if n := string(EncodeChange(c.r)); n != c.note {
			t.Errorf("%v: change %s, want %s", c.r, n, c.note)
		}
		back, err := DecodeChange([]byte(c.note), c.r.Pattern != PatternLiteral)
		if err != nil || back != c.r {
			t.Errorf("%v: decode change %v %v", c.r, back, err)
		}
	}
}

// Two brokers on one store: ACLs added through one apply on the other
// once its watch reads the notification; ACLs written the way Kafka's
// tools write them are honoured too.
func TestACLSyncAcrossBrokers(t *testing.T) {
	db := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a1, a2 := NewAuthorizer(nil, false), NewAuthorizer(nil, false)
	s1 := NewACLSync(db.NewSession(), a1, slog.Default())
	s2 := NewACLSync(db.NewSession(), a2, slog.Default())
	for _, s := range []*ACLSync{s1, s2} {
		if err := s.Load(ctx); err != nil {
			t.Fatal(err)
		}
		go s.Watch(ctx)
	}
	alice := User("alice")
	if err := s1.Add(ctx, []Binding{{pre(ResourceTopic, "app-"), allow("User:alice", "*", OpWrite)}}); err != nil {
		t.Fatal(err)
	}
	if !a1.Authorize(alice, "h", OpWrite, ResourceTopic, "app-1") {
		t.Fatal("writer's own authorizer not updated")
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		if !a2.Authorize(alice, "h", OpWrite, ResourceTopic, "app-1") {
			return fmt.Errorf("prefixed acl not seen on the other broker")
		}
		return nil
	})

	// As Kafka's kafka-acls writes a literal ACL in ZooKeeper mode.
	raw := db.NewSession()
	if _, err := store.CreateRecursive(ctx, raw, "/kafka-acl/Group/g", []byte(`{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(ctx, "/kafka-acl-changes/acl_changes_", []byte("Group:g"), store.Sequential); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		if !a1.Authorize(alice, "h", OpRead, ResourceGroup, "g") || !a2.Authorize(alice, "h", OpRead, ResourceGroup, "g") {
			return fmt.Errorf("kafka-written acl not honoured")
		}
		return nil
	})

	got, err := s2.Remove(ctx, []Filter{{Type: ResourceTopic, Pattern: PatternAny, Operation: OpAny, Permission: PermAny}})
	if err != nil || len(got) != 1 || len(got[0]) != 1 {
		t.Fatalf("remove: %v %v", got, err)
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		if a1.Authorize(alice, "h", OpWrite, ResourceTopic, "app-1") {
			return fmt.Errorf("removed acl still allows")
		}
		return nil
	})
	if ok, _, _ := raw.Exists(ctx, "/kafka-acl-extended/prefixed/Topic/app-"); ok {
		t.Fatal("empty resource znode left behind")
	}

	// A broker starting later loads everything.
	a3 := NewAuthorizer(nil, false)
	if err := NewACLSync(db.NewSession(), a3, slog.Default()).Load(ctx); err != nil {
		t.Fatal(err)
	}
	if !a3.Authorize(alice, "h", OpRead, ResourceGroup, "g") {
		t.Fatal("load missed a stored acl")
	}
}

func FuzzDecodeEntries(f *testing.F) {
	f.Add([]byte(`{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := DecodeEntries(data)
		if err != nil {
			return
		}
		back, err := DecodeEntries(EncodeEntries(es))
		if err != nil || !slices.Equal(back, es) {
			t.Fatalf("round trip: %v -> %v (%v)", es, back, err)
		}
	})
}

func FuzzDecodeChange(f *testing.F) {
	f.Add([]byte(`TOPIC:t`), false)
	f.Add([]byte(`{"version":1,"resourceType":"GROUP","name":"g-","patternType":"PREFIXED"}`), true)
	f.Fuzz(func(t *testing.T, data []byte, extended bool) {
		r, err := DecodeChange(data, extended)
		if err != nil || (extended && r.Pattern != PatternPrefixed) {
			return
		}
		back, err := DecodeChange(EncodeChange(r), extended)
		if err != nil || back != r {
			t.Fatalf("round trip: %v -> %v (%v)", r, back, err)
		}
	})
}

// A change written between a broker's Load and its watch's first read is
// applied, not taken for one Load already saw.
func TestACLWatchAppliesChangesSinceLoad(t *testing.T) {
	db := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a1, a2 := NewAuthorizer(nil, false), NewAuthorizer(nil, false)
	s1 := NewACLSync(db.NewSession(), a1, slog.Default())
	s2 := NewACLSync(db.NewSession(), a2, slog.Default())
	if err := s2.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s1.Add(ctx, []Binding{{lit(ResourceTopic, "late"), allow("User:alice", "*", OpRead)}}); err != nil {
		t.Fatal(err)
	}
	go s2.Watch(ctx)
	testutil.Eventually(t, 20*time.Second, func() error {
		if !a2.Authorize(User("alice"), "h", OpRead, ResourceTopic, "late") {
			return fmt.Errorf("acl added after Load and before the watch not applied")
		}
		return nil
	})
}
