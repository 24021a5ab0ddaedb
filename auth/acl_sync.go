package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brook-mq/brook/controller/store"
)

// ACLSync keeps an Authorizer equal to the ACLs in the metadata store
// (ZooKeeper, or the embedded store of a single node) and writes the
// changes of CreateAcls and DeleteAcls there, as Kafka's AclAuthorizer in
// ZooKeeper mode: each write is a conditional update of one resource
// znode followed by a sequential change notification, and every broker
// watching the notifications re-reads the resources they name.
type ACLSync struct {
	st  store.Store
	a   *Authorizer
	log *slog.Logger
	// now is the clock notifications are aged by (tests replace it).
	now func() time.Time
}

// NewACLSync ties an authorizer to a store.
func NewACLSync(st store.Store, a *Authorizer, log *slog.Logger) *ACLSync {
	return &ACLSync{st: st, a: a, log: log, now: time.Now}
}

// Load reads every ACL in the store, creating Kafka's ACL paths first.
func (s *ACLSync) Load(ctx context.Context) error {
	for _, p := range ACLPaths {
		if err := store.EnsurePath(ctx, s.st, p); err != nil {
			return fmt.Errorf("acl paths: %w", err)
		}
	}
	for _, pat := range []PatternType{PatternLiteral, PatternPrefixed} {
		for _, t := range StoredTypes {
			names, _, err := s.st.Children(ctx, TypeDir(pat, t))
			if errors.Is(err, store.ErrNoNode) {
				continue
			}
			if err != nil {
				return fmt.Errorf("load acls: %w", err)
			}
			for _, n := range names {
				if err := s.refresh(ctx, Resource{t, n, pat}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// refresh re-reads one resource's ACLs into the authorizer.
func (s *ACLSync) refresh(ctx context.Context, r Resource) error {
	data, _, err := s.st.Get(ctx, ResourcePath(r))
	if errors.Is(err, store.ErrNoNode) {
		s.a.SetResource(r, nil)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read acls of %v: %w", r, err)
	}
	es, err := DecodeEntries(data)
	if err != nil {
		// A node this broker cannot read is logged and left out, as Kafka
		// logs a notification it fails to process and goes on.
		s.log.Warn("ignoring unreadable acls", "resource", r.String(), "err", err)
		return nil
	}
	s.a.SetResource(r, es)
	return nil
}

// Watch follows both change paths until ctx ends. The notifications
// present when it starts are taken as read (Load ran before it); after
// each round those older than ChangeExpiry are purged.
func (s *ACLSync) Watch(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.watch(ctx, LiteralACLChangesPath, false); done <- struct{}{} }()
	s.watch(ctx, ExtendedACLChangesPath, true)
	<-done
}

func (s *ACLSync) watch(ctx context.Context, path string, extended bool) {
	// Every notification of the first round is applied too: one written
	// between Load and this watch's first read would otherwise be missed
	// for good (applying re-reads the resource, so the others cost a read
	// each and change nothing), as Kafka's listener processes all at start.
	last := int64(-1)
	for ctx.Err() == nil {
		children, _, ch, err := s.st.ChildrenW(ctx, path)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("watching acl changes", "path", path, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for _, c := range children {
			if seq, ok := changeSeq(c); ok && seq > last {
				if err := s.apply(ctx, path+"/"+c, extended); err != nil {
					s.log.Warn("processing acl change", "node", c, "err", err)
				}
			}
		}
		last = max(last, lastSeq(children))
		s.purge(ctx, path, children)
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// ChangeExpiry is how old a change notification is when the brokers
// purge it: Kafka's ZkNodeChangeNotificationListener default of 15
// minutes, long past the time every broker takes to read it.
const ChangeExpiry = 15 * time.Minute

// purge deletes the notifications under path created more than
// ChangeExpiry ago, after a round of them was read, as Kafka's
// purgeObsoleteNotifications. Several brokers may race to delete one; the
// losers find it gone.
func (s *ACLSync) purge(ctx context.Context, path string, children []string) {
	now := s.now()
	for _, c := range children {
		if _, ok := changeSeq(c); !ok {
			continue
		}
		node := path + "/" + c
		ok, st, err := s.st.Exists(ctx, node)
		if err != nil || !ok || now.Sub(time.UnixMilli(st.Ctime)) <= ChangeExpiry {
			continue
		}
		if err := s.st.Delete(ctx, node, store.AnyVersion); err != nil && !errors.Is(err, store.ErrNoNode) {
			s.log.Warn("purging acl change", "node", node, "err", err)
		}
	}
}

func (s *ACLSync) apply(ctx context.Context, node string, extended bool) error {
	data, _, err := s.st.Get(ctx, node)
	if errors.Is(err, store.ErrNoNode) {
		return nil // purged by a broker meanwhile
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", node, err)
	}
	r, err := DecodeChange(data, extended)
	if err != nil {
		return err
	}
	return s.refresh(ctx, r)
}

func changeSeq(name string) (int64, bool) {
	n, ok := strings.CutPrefix(name, ACLChangePrefix)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n, 10, 64)
	return v, err == nil
}

func lastSeq(children []string) int64 {
	last := int64(-1)
	for _, c := range children {
		if v, ok := changeSeq(c); ok && v > last {
			last = v
		}
	}
	return last
}

// Add writes bindings to the store (entries already there are kept once)
// and announces each changed resource.
func (s *ACLSync) Add(ctx context.Context, bs []Binding) error {
	byRes := map[Resource][]Entry{}
	var order []Resource
	for _, b := range bs {
		if _, ok := byRes[b.Resource]; !ok {
			order = append(order, b.Resource)
		}
		byRes[b.Resource] = append(byRes[b.Resource], b.Entry)
	}
	for _, r := range order {
		add := byRes[r]
		if err := s.update(ctx, r, func(es []Entry) []Entry {
			for _, e := range add {
				if !slices.Contains(es, e) {
					es = append(es, e)
				}
			}
			return es
		}); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes the bindings each filter selects and returns them, per
// filter.
func (s *ACLSync) Remove(ctx context.Context, filters []Filter) ([][]Binding, error) {
	out := make([][]Binding, len(filters))
	var order []Resource
	seen := map[Resource]bool{}
	for i, f := range filters {
		out[i] = s.a.Matching(f)
		for _, b := range out[i] {
			if !seen[b.Resource] {
				seen[b.Resource] = true
				order = append(order, b.Resource)
			}
		}
	}
	for _, r := range order {
		if err := s.update(ctx, r, func(es []Entry) []Entry {
			return slices.DeleteFunc(es, func(e Entry) bool {
				for _, f := range filters {
					if f.MatchesResource(r) && f.MatchesEntry(e) {
						return true
					}
				}
				return false
			})
		}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// update applies change to one resource's entries with a conditional
// write, retrying when another writer got there first, then announces it.
func (s *ACLSync) update(ctx context.Context, r Resource, change func([]Entry) []Entry) error {
	path := ResourcePath(r)
	for attempt := 0; ; attempt++ {
		if attempt == 100 {
			return fmt.Errorf("update acls of %v: too many conflicting writers", r)
		}
		data, stat, err := s.st.Get(ctx, path)
		exists := err == nil
		if err != nil && !errors.Is(err, store.ErrNoNode) {
			return fmt.Errorf("update acls of %v: %w", r, err)
		}
		var cur []Entry
		if exists {
			if cur, err = DecodeEntries(data); err != nil {
				return fmt.Errorf("update acls of %v: %w", r, err)
			}
		}
		next := change(slices.Clone(cur))
		if slices.Equal(cur, next) {
			s.a.SetResource(r, cur)
			return nil
		}
		switch {
		case len(next) == 0 && exists:
			err = s.st.Delete(ctx, path, stat.Version)
		case len(next) == 0:
			err = nil
		case exists:
			_, err = s.st.Set(ctx, path, EncodeEntries(next), stat.Version)
		default:
			_, err = store.CreateRecursive(ctx, s.st, path, EncodeEntries(next), 0)
		}
		if errors.Is(err, store.ErrBadVersion) || errors.Is(err, store.ErrNodeExists) || errors.Is(err, store.ErrNoNode) || errors.Is(err, store.ErrNotEmpty) {
			continue
		}
		if err != nil {
			return fmt.Errorf("update acls of %v: %w", r, err)
		}
		s.a.SetResource(r, next)
		if _, err := store.CreateRecursive(ctx, s.st, ChangePath(r), EncodeChange(r), store.Sequential); err != nil {
			return fmt.Errorf("announce acl change of %v: %w", r, err)
		}
		return nil
	}
}
