package controller

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/brook-mq/brook/controller/store"
)

// ErrBrokerIDInUse means another live broker holds the registration node.
var ErrBrokerIDInUse = errors.New("controller: broker id already registered by a live broker")

// EnsureTopLevelPaths creates the persistent paths every Kafka broker
// creates at start-up, so later creates find their parents.
func EnsureTopLevelPaths(ctx context.Context, st Store) error {
	for _, p := range persistentPaths() {
		if err := store.EnsurePath(ctx, st, p); err != nil {
			return fmt.Errorf("create top-level paths: %w", err)
		}
	}
	return nil
}

// RegisterBroker writes the broker's ephemeral /brokers/ids/<id> node and
// returns the broker epoch (the node's czxid). Registering again from the
// same session is accepted (a retried start-up step, or re-registration
// after a reconnect), and a node owned by another session is an error:
// two live brokers must not share an id.
//
// A broker killed and restarted at once finds its previous run's node,
// owned by a session ZooKeeper has not expired yet. Kafka exits then, and
// a supervisor restarting it crash-loops until the session expires. With
// Options.RegistrationWait, RegisterBroker instead waits that long for the
// owner's session to go, watching the node (no polling) and logging why;
// an owner still there after the wait is a live broker with the same id.
func RegisterBroker(ctx context.Context, st Store, b BrokerInfo, opts ...Option) (int64, error) {
	o := resolveOptions(opts)
	if err := EnsureTopLevelPaths(ctx, st); err != nil {
		return 0, err
	}
	path := BrokerPath(b.ID)
	start := o.Now()
	deadline := start.Add(o.RegistrationWait)
	waited := false
	for {
		_, err := st.Create(ctx, path, encodeBroker(b, o.Now().UnixMilli()), store.Ephemeral)
		if err != nil && !errors.Is(err, store.ErrNodeExists) {
			return 0, fmt.Errorf("register broker %d: %w", b.ID, err)
		}
		_, stat, err := st.Get(ctx, path)
		if errors.Is(err, store.ErrNoNode) {
			continue // the other owner's session ended just now: try again
		}
		if err != nil {
			return 0, fmt.Errorf("register broker %d: read back: %w", b.ID, err)
		}
		if stat.EphemeralOwner == st.SessionID() {
			if waited {
				o.Logger.Info("registered once the previous registration expired", "broker.id", b.ID, "waited", o.Now().Sub(start).Round(time.Millisecond))
			}
			return stat.Czxid, nil
		}
		if err := awaitRegistrationGone(ctx, st, b.ID, stat.EphemeralOwner, deadline, o); err != nil {
			return 0, err
		}
		waited = true
	}
}

// awaitRegistrationGone waits, until deadline, for a change to the broker
// registration node that another session owns. It returns nil when the
// node changed (most likely deleted, as its session expired) and
// ErrBrokerIDInUse once the deadline has passed.
func awaitRegistrationGone(ctx context.Context, st Store, id int32, owner int64, deadline time.Time, o Options) error {
	path := BrokerPath(id)
	remaining := deadline.Sub(o.Now())
	if remaining <= 0 {
		err := fmt.Errorf("%w: %s is owned by session 0x%x, not ours (0x%x)", ErrBrokerIDInUse, path, owner, st.SessionID())
		if o.RegistrationWait > 0 {
			err = fmt.Errorf("%w, still after waiting %v for that session to expire", err, o.RegistrationWait)
		}
		return err
	}
	ok, stat, ch, err := st.ExistsW(ctx, path)
	if err != nil {
		return fmt.Errorf("register broker %d: watch %s: %w", id, path, err)
	}
	if !ok || stat.EphemeralOwner != owner {
		return nil // changed before the watch was set: look again
	}
	o.Logger.Warn("broker id is registered by another zookeeper session; waiting for it to expire (this broker's previous run, killed before zookeeper noticed?); a live broker with this id still holds it after the wait",
		"broker.id", id, "path", path, "owner_session", fmt.Sprintf("0x%x", owner), "our_session", fmt.Sprintf("0x%x", st.SessionID()), "remaining", remaining.Round(time.Millisecond))
	timer := time.NewTimer(remaining)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("register broker %d: waiting for %s to expire: %w", id, path, ctx.Err())
	case ev := <-ch:
		if ev.Type == store.EventNotWatching {
			return fmt.Errorf("register broker %d: watch %s: %w", id, path, ev.Err)
		}
		return nil
	case <-timer.C:
		return nil // the next look finds it still there, past the deadline
	}
}

// LiveBrokers reads every registered broker, sorted by id, with its epoch.
func LiveBrokers(ctx context.Context, st Store) ([]BrokerInfo, error) {
	ids, _, err := st.Children(ctx, BrokerIDsPath)
	if errors.Is(err, store.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list brokers: %w", err)
	}
	return readBrokers(ctx, st, ids)
}

func readBrokers(ctx context.Context, st Store, ids []string) ([]BrokerInfo, error) {
	var out []BrokerInfo
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			continue // not a broker registration
		}
		data, stat, err := st.Get(ctx, BrokerPath(int32(id)))
		if errors.Is(err, store.ErrNoNode) {
			continue // went away between the listing and the read
		}
		if err != nil {
			return nil, fmt.Errorf("read broker %d: %w", id, err)
		}
		b, err := decodeBroker(int32(id), data)
		if err != nil {
			// An unreadable registration cannot be used to reach the broker;
			// treating it as absent keeps the rest of the cluster working.
			continue
		}
		b.Epoch = stat.Czxid
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// EnsureClusterID returns the cluster id in /cluster/id, creating it with a
// fresh random id if there is none yet (the first broker of a cluster).
func EnsureClusterID(ctx context.Context, st Store) (string, error) {
	for range 3 {
		data, _, err := st.Get(ctx, ClusterIDPath)
		if err == nil {
			var j clusterIDJSON
			if err := json.Unmarshal(data, &j); err != nil || j.ID == "" {
				return "", fmt.Errorf("%w: %s: %q", ErrBadZnodeData, ClusterIDPath, data)
			}
			return j.ID, nil
		}
		if !errors.Is(err, store.ErrNoNode) {
			return "", fmt.Errorf("read cluster id: %w", err)
		}
		id := UUIDString(RandomUUID())
		_, err = store.CreateRecursive(ctx, st, ClusterIDPath, mustJSON(clusterIDJSON{Version: "1", ID: id}), 0)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, store.ErrNodeExists) {
			return "", fmt.Errorf("create cluster id: %w", err)
		}
		// Another broker won the race; read its id.
	}
	return "", fmt.Errorf("create cluster id: %s keeps changing", ClusterIDPath)
}

// RandomUUID returns a random id that Kafka's Uuid.randomUuid could return:
// never zero, never the metadata topic's reserved id, and never one whose
// string form starts with '-' (which would look like a command-line flag).
func RandomUUID() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
		// [16]byte{15: 1} is Kafka's reserved Uuid.METADATA_TOPIC_ID.
		if id == ([16]byte{}) || id == ([16]byte{15: 1}) || UUIDString(id)[0] == '-' {
			continue
		}
		return id
	}
}

// ProducerIDBlockSize is Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
const ProducerIDBlockSize = 1000

// ErrProducerIDsExhausted means the producer id space is used up.
var ErrProducerIDsExhausted = errors.New("controller: producer ids exhausted")

// NextProducerIDBlock claims the next block of size producer ids for brokerID
// from /latest_producer_id_block with a version-checked write, retrying when
// another broker claims a block at the same time. end is inclusive.
func NextProducerIDBlock(ctx context.Context, st Store, brokerID int32, size int64) (start, end int64, err error) {
	if size <= 0 {
		return 0, 0, fmt.Errorf("controller: producer id block size %d", size)
	}
	for {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		data, stat, err := st.Get(ctx, ProducerIDBlockPath)
		exists := err == nil
		if err != nil && !errors.Is(err, store.ErrNoNode) {
			return 0, 0, fmt.Errorf("read producer id block: %w", err)
		}
		start = 0
		if exists && len(data) > 0 {
			var j producerIDBlockJSON
			if err := json.Unmarshal(data, &j); err != nil {
				return 0, 0, fmt.Errorf("%w: %s: %v", ErrBadZnodeData, ProducerIDBlockPath, err)
			}
			prevEnd, err := strconv.ParseInt(j.BlockEnd, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("%w: %s: block_end %q", ErrBadZnodeData, ProducerIDBlockPath, j.BlockEnd)
			}
			if prevEnd > (1<<63-1)-size {
				return 0, 0, ErrProducerIDsExhausted
			}
			start = prevEnd + 1
		}
		end = start + size - 1
		payload := mustJSON(producerIDBlockJSON{Version: 1, Broker: brokerID, BlockStart: strconv.FormatInt(start, 10), BlockEnd: strconv.FormatInt(end, 10)})
		if exists {
			_, err = st.Set(ctx, ProducerIDBlockPath, payload, stat.Version)
		} else {
			_, err = store.CreateRecursive(ctx, st, ProducerIDBlockPath, payload, 0)
		}
		if err == nil {
			return start, end, nil
		}
		if !errors.Is(err, store.ErrBadVersion) && !errors.Is(err, store.ErrNodeExists) {
			return 0, 0, fmt.Errorf("claim producer id block: %w", err)
		}
		// Lost a race with another broker: read the new latest block and retry.
	}
}
