package txn

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/brook-mq/brook/internal/pending"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The methods below are what the broker's handlers call. Each runs a step
// and, when the step appends, waits for the record to be committed: a
// state change is answered only after it is durable, as in Kafka. Each
// has a Start form (pending.go) that returns without waiting, for a
// driver that cannot block (the simulation); the blocking method is the
// Start form plus the wait.

// InitProducerID handles InitProducerId with a transactional id.
// producerID and epoch are the KIP-360 fields (-1, -1 when absent).
func (c *Coordinator) InitProducerID(ctx context.Context, txnID string, timeoutMs int32, producerID int64, epoch int16) InitResult {
	return c.StartInitProducerID(ctx, txnID, timeoutMs, producerID, epoch).Wait(ctx)
}

// StartInitProducerID is InitProducerID without the wait for the record's
// commit. ctx bounds only the producer id allocation.
func (c *Coordinator) StartInitProducerID(ctx context.Context, txnID string, timeoutMs int32, producerID int64, epoch int16) *Pending[InitResult] {
	failed := func(code int16) InitResult { return InitResult{Err: code, ProducerID: -1, ProducerEpoch: -1} }
	a := initArgs{txnID: txnID, timeoutMs: timeoutMs, expectedID: producerID, expectedEpoch: epoch}
	return startWithProducerID(ctx, c, txnID, failed, func(s *shard, newID int64, now time.Time, eff *effects, reply func(InitResult)) bool {
		a.newProducerID, a.reply = newID, reply
		return s.initProducerID(a, now, eff)
	})
}

// startWithProducerID runs a step that may need a fresh producer id (a new
// transactional id, an exhausted epoch): when the first pass asks for
// one, the id is allocated outside the lock and the step runs again with
// it. The answer is the step's reply, or failed's for a coordinator-level
// code.
func startWithProducerID[T any](ctx context.Context, c *Coordinator, txnID string, failed func(int16) T,
	step func(s *shard, newID int64, now time.Time, eff *effects, reply func(T)) (needID bool)) *Pending[T] {
	newID := noProducerID
	for range 2 {
		p := pending.New(failed(kerr.RequestTimedOut.Code))
		needID := false
		if code := c.step(txnID, func(s *shard, now time.Time, eff *effects) {
			needID = step(s, newID, now, eff, p.Answer)
		}); code != 0 {
			return pending.Answered(failed(code))
		}
		if !needID {
			return p
		}
		id, err := c.cfg.NewProducerID(ctx)
		if err != nil {
			c.log.Warn("allocate producer id", "transactional_id", txnID, "err", err)
			return pending.Answered(failed(kerr.CoordinatorNotAvailable.Code))
		}
		newID = id
	}
	return pending.Answered(failed(kerr.ConcurrentTransactions.Code))
}

func (c *Coordinator) startCode(txnID string, fn func(s *shard, now time.Time, eff *effects, reply func(int16))) *Pending[int16] {
	p := pending.New(kerr.RequestTimedOut.Code)
	if code := c.step(txnID, func(s *shard, now time.Time, eff *effects) { fn(s, now, eff, p.Answer) }); code != 0 {
		return pending.Answered(code)
	}
	return p
}

// AddPartitions handles AddPartitionsToTxn v0-3 (and v4+ without
// verify_only, which partition leaders send for a TV2 producer): one code
// for all partitions. tv is the client's transaction version (TV2 for
// v4+, as Kafka's transactionVersionForAddPartitionsToTxn).
func (c *Coordinator) AddPartitions(ctx context.Context, txnID string, producerID int64, epoch int16, tps []TopicPartition, tv int16) int16 {
	return c.StartAddPartitions(txnID, producerID, epoch, tps, tv).Wait(ctx)
}

// StartAddPartitions is AddPartitions without the wait.
func (c *Coordinator) StartAddPartitions(txnID string, producerID int64, epoch int16, tps []TopicPartition, tv int16) *Pending[int16] {
	return c.startCode(txnID, func(s *shard, now time.Time, eff *effects, reply func(int16)) {
		s.addPartitions(txnID, producerID, epoch, tps, tv, now, eff, reply)
	})
}

// VerifyPartitions handles AddPartitionsToTxn v4+ with verify_only.
func (c *Coordinator) VerifyPartitions(txnID string, producerID int64, epoch int16, tps []TopicPartition) map[TopicPartition]int16 {
	var out map[TopicPartition]int16
	if code := c.step(txnID, func(s *shard, _ time.Time, _ *effects) { out = s.verifyPartitions(txnID, producerID, epoch, tps) }); code != 0 {
		out = make(map[TopicPartition]int16, len(tps))
		for _, tp := range tps {
			out[tp] = code
		}
	}
	return out
}

// AddOffsets handles AddOffsetsToTxn: the group's __consumer_offsets
// partition joins the transaction, so that its TxnOffsetCommit records
// get a marker. Kafka takes every AddOffsetsToTxn as transaction version 0
// (a TV2 producer does not send it).
func (c *Coordinator) AddOffsets(ctx context.Context, txnID string, producerID int64, epoch int16, groupID string) int16 {
	return c.StartAddOffsets(txnID, producerID, epoch, groupID).Wait(ctx)
}

// StartAddOffsets is AddOffsets without the wait.
func (c *Coordinator) StartAddOffsets(txnID string, producerID int64, epoch int16, groupID string) *Pending[int16] {
	return c.StartAddPartitions(txnID, producerID, epoch, []TopicPartition{c.OffsetsPartition(groupID)}, TV0)
}

// OffsetsPartition is the __consumer_offsets partition of a group, which
// a transaction's offsets are added as.
func (c *Coordinator) OffsetsPartition(groupID string) TopicPartition {
	return TopicPartition{Topic: OffsetsTopic, Partition: c.limits.offsetsPartsFor(groupID)}
}

// OffsetsTopic is where AddOffsetsToTxn's partition lives.
const OffsetsTopic = "__consumer_offsets"

// EndTxn handles EndTxn: the answer comes once PrepareCommit or
// PrepareAbort is committed; markers follow in the background. tv is the
// client's transaction version (TV2 for EndTxn v5+, as Kafka's
// transactionVersionForEndTxn); below 2 the answer's producer id and epoch
// are -1 and the epoch does not move.
func (c *Coordinator) EndTxn(ctx context.Context, txnID string, producerID int64, epoch int16, commit bool, tv int16) EndResult {
	return c.StartEndTxn(ctx, txnID, producerID, epoch, commit, tv).Wait(ctx)
}

// StartEndTxn is EndTxn without the wait for PrepareCommit or
// PrepareAbort to be committed. ctx bounds only the producer id
// allocation of a TV2 bump past the last epoch.
func (c *Coordinator) StartEndTxn(ctx context.Context, txnID string, producerID int64, epoch int16, commit bool, tv int16) *Pending[EndResult] {
	if tv < TV2 {
		p := pending.New(endFailed(kerr.RequestTimedOut.Code))
		if code := c.step(txnID, func(s *shard, now time.Time, eff *effects) {
			s.endTxn(txnID, producerID, epoch, commit, now, eff, func(code int16) { p.Answer(endFailed(code)) })
		}); code != 0 {
			return pending.Answered(endFailed(code))
		}
		return p
	}
	a := endArgs{txnID: txnID, producerID: producerID, epoch: epoch, commit: commit, tv: tv}
	return startWithProducerID(ctx, c, txnID, endFailed, func(s *shard, newID int64, now time.Time, eff *effects, reply func(EndResult)) bool {
		a.newProducerID, a.reply = newID, reply
		return s.endTxnV2(a, now, eff)
	})
}

// Describe handles one id of DescribeTransactions.
func (c *Coordinator) Describe(txnID string) Description {
	var d Description
	if code := c.step(txnID, func(s *shard, _ time.Time, _ *effects) { d = s.describe(txnID) }); code != 0 {
		return Description{Err: code, TransactionalID: txnID, ProducerID: -1, ProducerEpoch: -1, StartTimeMs: -1}
	}
	return d
}

// List handles ListTransactions over every partition this broker leads;
// while one is loading the answer is COORDINATOR_LOAD_IN_PROGRESS, as in
// Kafka.
func (c *Coordinator) List(f ListFilter) ([]Listing, int16) {
	var out []Listing
	for _, ps := range c.partitions() {
		if code := c.stepPartition(ps, func(s *shard, now time.Time, _ *effects) { out = s.list(f, now, out) }); code == kerr.CoordinatorLoadInProgress.Code {
			return nil, code
		}
	}
	slices.SortFunc(out, func(a, b Listing) int { return strings.Compare(a.TransactionalID, b.TransactionalID) })
	return out, 0
}
