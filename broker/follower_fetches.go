package broker

// The leader's side of followers' Fetch requests without a Broker, for the
// deterministic simulation (sim/): the broker's fetch session cache
// (fetchSessions.open, peek and finish, which the Fetch handler calls
// through openFetchSession, peekFetchSession and finishFetchSession), the
// partitions of one replica.Manager found as leaderPartition finds them,
// and each answered by replica.Manager.ReadForFollower as readFetch
// answers a follower's. Left out, since the simulation has none of them:
// metadata (a partition the manager does not host is
// NOT_LEADER_OR_FOLLOWER), authorization, the long poll (the answer is
// given at once), quotas and metrics, the check of zstd batches for
// versions before 10.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/replica"
)

// FollowerFetches answers followers' fetches of the partitions a
// replica.Manager leads, in fetch sessions as the broker's.
type FollowerFetches struct {
	replicas *replica.Manager
	sessions *fetchSessions
	now      func() time.Time
	// topicName resolves a Fetch v13+ topic id.
	topicName func([16]byte) (string, bool)
}

// FollowerFetchesConfig configures NewFollowerFetches.
type FollowerFetchesConfig struct {
	Replicas *replica.Manager
	// SessionSlots is max.incremental.fetch.session.cache.slots.
	SessionSlots int
	// Now is the sessions' clock; NewSessionID draws a positive session id.
	Now          func() time.Time
	NewSessionID func() int32
	// TopicName resolves a topic id (Fetch v13+).
	TopicName func([16]byte) (string, bool)
}

// NewFollowerFetches returns an empty session cache over cfg.Replicas.
func NewFollowerFetches(cfg FollowerFetchesConfig) *FollowerFetches {
	return &FollowerFetches{
		replicas:  cfg.Replicas,
		sessions:  &fetchSessions{cache: newFetchSessionCache(cfg.SessionSlots, cfg.NewSessionID)},
		now:       cfg.Now,
		topicName: cfg.TopicName,
	}
}

// Serve answers req, a follower's Fetch, at once, with the records read
// into the response.
func (f *FollowerFetches) Serve(req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	replicaID := fetchReplicaID(req)
	if replicaID < 0 {
		return nil, fmt.Errorf("fetch of replica id %d: not a follower's", replicaID)
	}
	// A follower's partitions are never quiet (quietContext).
	qc := quietContext{replicaID: replicaID, replicaEpoch: fetchReplicaEpoch(req), isolation: req.IsolationLevel}
	st := f.sessions.open(f.now().UnixMilli(), req, qc, func(s *fetchSession) ([]fetchSessionPartition, []quietRef) {
		var parts []fetchSessionPartition
		for p := s.head; p != nil; p = p.next {
			parts = append(parts, fetchSessionPartition{key: p.key, params: p.params, cached: p})
		}
		return parts, nil
	})
	if st.ctx.kind == fetchSessionError {
		resp.ErrorCode = st.ctx.errorCode
		return resp, nil
	}
	req = st.req
	regions, targets := f.resolve(req, resp)
	if err := f.read(req, replicaID, int(req.MaxBytes), targets); err != nil {
		return nil, err
	}
	f.sessions.peek(&st, targets, false)
	f.sessions.finish(f.now().UnixMilli(), &st, true, resp, regions, false)
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if r := regions[ti][pi]; r.Size > 0 {
				b, err := r.ReadInto(nil)
				if err != nil {
					return nil, fmt.Errorf("read %s-%d: %w", resp.Topics[ti].Topic, resp.Topics[ti].Partitions[pi].Partition, err)
				}
				resp.Topics[ti].Partitions[pi].RecordBatches = b
			}
		}
	}
	return resp, nil
}

// resolve builds the response skeleton, regions and targets of req, as
// resolveFetchTopics does for a follower.
func (f *FollowerFetches) resolve(req *kmsg.FetchRequest, resp *kmsg.FetchResponse) ([][]log.Slice, []fetchTarget) {
	var regions [][]log.Slice
	var targets []fetchTarget
	for _, rt := range req.Topics {
		resp.Topics = append(resp.Topics, kmsg.NewFetchResponseTopic())
		st := &resp.Topics[len(resp.Topics)-1]
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name, topicCode := rt.Topic, int16(0)
		if req.Version >= 13 {
			if n, ok := f.topicName(rt.TopicID); ok {
				name = n
			} else {
				topicCode = kerr.UnknownTopicID.Code
			}
		}
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		rs := make([]log.Slice, len(rt.Partitions))
		regions = append(regions, rs)
		for j, rp := range rt.Partitions {
			t := newFetchTarget(&st.Partitions[j], rp, &rs[j])
			code := topicCode
			if code == 0 {
				if t.part = f.replicas.Get(name, rp.Partition); t.part == nil || !t.part.IsLeader() {
					code = kerr.NotLeaderForPartition.Code
				}
			}
			if code == 0 {
				code = replica.EpochErrorCode(t.part.CheckLeaderEpoch(rp.CurrentLeaderEpoch))
			}
			if code != 0 {
				t.resp.ErrorCode, t.part = code, nil
			}
			targets = append(targets, t)
		}
	}
	return regions, targets
}

// read reads every readable target as readFetch reads a follower's.
func (f *FollowerFetches) read(req *kmsg.FetchRequest, replicaID int32, maxBytes int, targets []fetchTarget) error {
	remaining, total := maxBytes, 0
	for i := range targets {
		t := &targets[i]
		if t.part == nil {
			continue
		}
		slice, code, err := readForFollower(f.replicas, req, replicaID, t, min(int(t.req.PartitionMaxBytes), remaining), total == 0)
		switch {
		case code != 0:
			t.resp.ErrorCode = code
		case err != nil:
			return fmt.Errorf("read %s at %d: %w", t.part.TopicPartition(), t.req.FetchOffset, err)
		case slice.Size > 0:
			*t.region = slice
			total += int(slice.Size)
			remaining -= int(slice.Size)
		}
	}
	return nil
}
