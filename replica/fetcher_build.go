package replica

// The follower fetcher's rounds toward one leader in step form, apart from
// its goroutine, lock and network: which partitions an OffsetForLeaderEpoch
// or a Fetch request carries and with what, the fetch session (KIP-227,
// fetch_session.go), the follower throttle, and which partitions of an
// answer still apply. The fetcher (fetcher.go, truncate.go) calls these
// under its lock and sends the requests; the deterministic simulation
// (sim/) calls them from its own driver and sends them over its network,
// so both build the same requests.

import (
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

// FetchPartitionState is the follower's fetch state of one partition, as
// Kafka's PartitionFetchState.
type FetchPartitionState struct {
	// LeaderEpoch is the epoch of the leader it follows (the requests'
	// current_leader_epoch).
	LeaderEpoch int32
	// Truncate: ask the leader where the logs diverge before fetching.
	Truncate bool
	// DelayUntil backs the partition off after an error
	// (replica.fetch.backoff.ms).
	DelayUntil time.Time
	// InSync: the log end reached the leader's HW in its last answer
	// (Kafka's isReplicaInSync); only replicas out of sync are held back
	// by the follower throttle.
	InSync bool
}

// Follow applies a step, taken at now, to the state.
func (s *FetchPartitionState) Follow(step FollowerStep, now time.Time, backoff time.Duration) {
	s.Truncate = step.Truncate
	if step.Backoff {
		s.DelayUntil = now.Add(backoff)
	}
	if step.HighWatermarkKnown {
		s.InSync = step.InSync
	}
}

// FetchPartition is a partition the follower fetches from the leader, with
// its fetch state.
type FetchPartition struct {
	P     *Partition
	State *FetchPartitionState
}

// FetchLookup finds a partition of an answer among those the follower
// still fetches from the leader; false when it no longer does (removed on
// a role change).
type FetchLookup func(log.TopicPartition) (FetchPartition, bool)

// LeaderFetcher is a follower's fetcher toward one leader in step form:
// it builds the requests and applies the answers; its caller sends them
// and holds a lock for the partitions' states.
type LeaderFetcher struct {
	m      *Manager
	leader int32
	// logger is what the follower steps log through.
	logger *slog.Logger
	// session is the fetch session with the leader.
	session fetchSessionHandler
	// fetch is FetchRequest's list of the partitions it fetches, kept to
	// be reused: it has an entry for each partition, every fetch.
	fetch []sessionFetchPartition
}

// NewLeaderFetcher returns the fetcher of m's partitions that follow
// leader, logging through logger (the manager's when nil).
func (m *Manager) NewLeaderFetcher(leader int32, logger *slog.Logger) *LeaderFetcher {
	if logger == nil {
		logger = m.logger
	}
	return &LeaderFetcher{m: m, leader: leader, logger: logger}
}

// EpochSent is the leader epoch each partition had when its
// OffsetForLeaderEpoch went out.
type EpochSent map[log.TopicPartition]int32

// EpochRequest builds the OffsetForLeaderEpoch request for the partitions
// waiting for truncation and not backed off, asking where the log's
// latest epoch ends on the leader; a log with no epochs is cut at its HW
// at once (TruncationEpoch). It returns nil when none is to be asked.
func (lf *LeaderFetcher) EpochRequest(parts []FetchPartition) (*kmsg.OffsetForLeaderEpochRequest, EpochSent) {
	cfg := lf.m.cfg
	now := cfg.Now()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = lf.m.localID
	sent := EpochSent{}
	topics := map[string]int{}
	for _, fp := range parts {
		st, tp := fp.State, fp.P.tp
		if !st.Truncate || now.Before(st.DelayUntil) {
			continue
		}
		latest, step := fp.P.TruncationEpoch(lf.logger)
		if latest < 0 {
			// No epochs: the log was cut to its HW, or failed to be.
			st.Follow(step, now, cfg.FetchBackoff)
			continue
		}
		i, ok := topics[tp.Topic]
		if !ok {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topics[tp.Topic] = i
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = st.LeaderEpoch
		rp.LeaderEpoch = latest
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent[tp] = st.LeaderEpoch
	}
	if len(sent) == 0 {
		return nil, nil
	}
	return req, sent
}

// ApplyEpochResponse truncates each partition of resp that still waits
// for it in the epoch it was asked in (ApplyEpochAnswer).
func (lf *LeaderFetcher) ApplyEpochResponse(resp *kmsg.OffsetForLeaderEpochResponse, sent EpochSent, lookup FetchLookup) {
	cfg := lf.m.cfg
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			tp := log.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			fp, ok := lookup(tp)
			epoch, asked := sent[tp]
			if !ok || !asked || !fp.State.Truncate || fp.State.LeaderEpoch != epoch {
				continue
			}
			fp.State.Follow(fp.P.ApplyEpochAnswer(rp, lf.logger), cfg.Now(), cfg.FetchBackoff)
		}
	}
}

// FetchRequest builds the Fetch request for the partitions ready to fetch
// (not truncating, backed off or throttled), in the fetch session: an
// incremental request lists only what changed, but sent holds every
// partition fetched, since the answer may carry any of them. It returns
// nil and the earliest time a backed-off partition (fetching or
// truncating) is ready when there is nothing to fetch now. sent answers
// as it did when built, however many requests are built after it.
func (lf *LeaderFetcher) FetchRequest(parts []FetchPartition) (*kmsg.FetchRequest, FetchSent, time.Time) {
	cfg := lf.m.cfg
	now := cfg.Now()
	quota := cfg.FollowerQuota
	req := kmsg.NewPtrFetchRequest()
	// Up to v14 the replica id is ReplicaID, from v15 ReplicaState.ID; the
	// connection pins the version, so both are set. From v15 the broker
	// epoch goes too: the leader names this broker with it in the ISR
	// changes it proposes (KIP-903).
	req.ReplicaID = lf.m.localID
	req.ReplicaState.ID, req.ReplicaState.Epoch = lf.m.localID, lf.m.brokerEpoch()
	req.MaxWaitMillis = int32(cfg.FetchWaitMax / time.Millisecond)
	req.MinBytes = cfg.FetchMinBytes
	req.MaxBytes = cfg.FetchResponseMaxBytes
	fetch := lf.fetch[:0]
	var next time.Time
	for _, fp := range parts {
		st, tp := fp.State, fp.P.tp
		if now.Before(st.DelayUntil) {
			if next.IsZero() || st.DelayUntil.Before(next) {
				next = st.DelayUntil
			}
			continue
		}
		if st.Truncate {
			continue
		}
		if quota.ShouldThrottle(tp.Topic, tp.Partition, st.InSync) {
			// Left out until the rate falls, as Kafka's fetcher does, and
			// looked at again after replica.fetch.backoff.ms.
			if again := now.Add(cfg.FetchBackoff); next.IsZero() || again.Before(next) {
				next = again
			}
			continue
		}
		l := fp.P.log
		sp := sessionFetchPartition{
			key: sessionPartitionKey{topic: tp.Topic, topicID: fp.P.topicID, partition: tp.Partition},
			data: sessionPartitionData{
				fetchOffset: l.LogEndOffset(), logStartOffset: l.LogStartOffset(), maxBytes: cfg.FetchMaxBytes,
				currentLeaderEpoch: st.LeaderEpoch, lastFetchedEpoch: -1,
			},
		}
		fetch = append(fetch, sp)
	}
	lf.fetch = fetch
	if len(fetch) == 0 {
		return nil, FetchSent{}, next
	}
	var send []sessionFetchPartition
	var forget []sessionPartitionKey
	req.SessionID, req.SessionEpoch, send, forget = lf.session.build(fetch)
	topics := map[[16]byte]int{}
	for _, sp := range send {
		i, ok := topics[sp.key.topicID]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = sp.key.topic, sp.key.topicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topics[sp.key.topicID] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = sp.key.partition
		rp.CurrentLeaderEpoch = sp.data.currentLeaderEpoch
		rp.FetchOffset = sp.data.fetchOffset
		rp.LastFetchedEpoch = sp.data.lastFetchedEpoch
		rp.LogStartOffset = sp.data.logStartOffset
		rp.PartitionMaxBytes = sp.data.maxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	forgotten := map[[16]byte]int{}
	for _, k := range forget {
		i, ok := forgotten[k.topicID]
		if !ok {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = k.topic, k.topicID
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
			i = len(req.ForgottenTopics) - 1
			forgotten[k.topicID] = i
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.partition)
	}
	return req, FetchSent{r: lf.session.sent.cur}, next
}

// FetchAnswered takes the outcome of a Fetch request into the session:
// err is the request's failure, resp its answer otherwise. It returns the
// error the fetcher backs off on: err, or the answer's top-level error.
func (lf *LeaderFetcher) FetchAnswered(resp *kmsg.FetchResponse, err error) error {
	if err != nil {
		lf.session.handleError()
		return err
	}
	lf.session.handleResponse(resp.ErrorCode, resp.SessionID)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	return nil
}

// ApplyFetchResponse applies a Fetch answer (ApplyFetched) to each of its
// partitions that still is as it was fetched, and counts the records of
// throttled partitions toward the follower throttle.
func (lf *LeaderFetcher) ApplyFetchResponse(resp *kmsg.FetchResponse, sent FetchSent, lookup FetchLookup) {
	cfg := lf.m.cfg
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			s, ok := sent.lookup(sentKey{rt.TopicID, rp.Partition})
			if !ok {
				continue
			}
			fp, ok := lookup(s.tp)
			if !ok || fp.State.Truncate || fp.State.LeaderEpoch != s.leaderEpoch || fp.P.log.LogEndOffset() != s.fetchOffset {
				continue // the partition moved on while the fetch was out
			}
			fp.State.Follow(fp.P.ApplyFetched(rp, lf.leader, lf.logger), cfg.Now(), cfg.FetchBackoff)
			if quota := cfg.FollowerQuota; quota.IsThrottled(s.tp.Topic, s.tp.Partition) {
				quota.Record(int64(len(rp.RecordBatches)))
			}
		}
	}
}
