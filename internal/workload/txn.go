package workload

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

const (
	// txnInterval paces each transactional producer between transactions:
	// a steady stream of commits and aborts through every fault, light
	// enough for a shared 2-core machine.
	txnInterval = 50 * time.Millisecond
	// txnCommitShare is the share of transactions asked to commit.
	txnCommitShare = 0.6
	// TxnTimeout is the producers' transaction.timeout.ms: a transaction
	// whose client gave up is aborted by its coordinator after it.
	TxnTimeout = 10 * time.Second
	// txnStepTimeout bounds a produce or EndTxn under chaos; the client
	// retries within it. Past it the transaction's outcome is unknown.
	txnStepTimeout = time.Minute
)

// TxnLog gathers what the producers sent and learned, by transaction.
type TxnLog struct {
	mu         sync.Mutex
	txns       map[TxnKey]TxnInfo
	errs       map[string]int // error text -> count
	lastCommit time.Time      // when the last commit was acknowledged
}

func (l *TxnLog) begin(k TxnKey, partitions []int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.txns[k] = TxnInfo{Partitions: partitions, Outcome: TxnAborted}
}

func (l *TxnLog) end(k TxnKey, o TxnOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	info := l.txns[k]
	info.Outcome = o
	l.txns[k] = info
	if o == TxnCommitted {
		l.lastCommit = time.Now()
	}
}

func (l *TxnLog) fail(what string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[what+": "+err.Error()]++
}

// Snapshot is every transaction sent so far, by key.
func (l *TxnLog) Snapshot() map[TxnKey]TxnInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.txns)
}

// Errors counts the errors the producers met, by text.
func (l *TxnLog) Errors() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.errs)
}

// LastCommitAt is when the last commit was acknowledged.
func (l *TxnLog) LastCommitAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastCommit
}

// TxnProducers are transactional producers, one goroutine and
// transactional id each, writing transactions over the partitions of one
// topic and committing or aborting them at random; Log records what each
// transaction was and what its producer learned of its outcome, for
// VerifyTxn.
type TxnProducers struct {
	bootstrap  string
	topic      string
	partitions int32
	ids        []string
	seed       uint64
	Log        *TxnLog
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

// NewTxnProducers makes one producer per transactional id in ids, writing
// to partitions 0..partitions-1 of topic (at least two); seed drives their
// choices. Start starts them.
func NewTxnProducers(bootstrap, topic string, partitions int32, ids []string, seed uint64) *TxnProducers {
	return &TxnProducers{bootstrap: bootstrap, topic: topic, partitions: partitions, ids: ids, seed: seed,
		Log: &TxnLog{txns: map[TxnKey]TxnInfo{}, errs: map[string]int{}}, cancel: func() {}}
}

// Start starts the producers; they run until Stop or the test's end.
func (ps *TxnProducers) Start(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	ps.cancel = cancel
	t.Cleanup(ps.Stop)
	for i := range ps.ids {
		rng := rand.New(rand.NewPCG(ps.seed, uint64(i)+1))
		ps.wg.Go(func() { ps.run(ctx, i, rng) })
	}
}

// Stop ends the producers after their current transaction; it is safe to
// call twice.
func (ps *TxnProducers) Stop() {
	ps.cancel()
	ps.wg.Wait()
}

// run sends transactions until ctx ends. After any error the client is
// closed and a new one made: its InitProducerId bumps the epoch, which
// fences the old one and ends whatever it left open.
func (ps *TxnProducers) run(ctx context.Context, i int, rng *rand.Rand) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for txn := 0; ctx.Err() == nil; txn++ {
		if cl == nil {
			var err error
			if cl, err = ps.client(i); err != nil {
				ps.Log.fail("client", err)
				return
			}
		}
		if !ps.transact(cl, TxnKey{i, txn}, rng) {
			cl.Close()
			cl = nil
		}
		Wait(txnInterval)
	}
}

func (ps *TxnProducers) client(i int) (*kgo.Client, error) {
	opts := append(ClientLog(),
		kgo.SeedBrokers(strings.Split(ps.bootstrap, ",")...),
		kgo.TransactionalID(ps.ids[i]),
		kgo.TransactionTimeout(TxnTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.DialTimeout(2*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	return kgo.NewClient(opts...)
}

// transact runs one transaction: two to four partitions (as many as there are), one to three
// records each, then commit or abort at random. It records the outcome
// and returns whether the client is still fit for the next one.
func (ps *TxnProducers) transact(cl *kgo.Client, k TxnKey, rng *rand.Rand) bool {
	var parts []int32
	for _, p := range rng.Perm(int(ps.partitions))[:min(int(ps.partitions), 2+rng.IntN(3))] {
		for range 1 + rng.IntN(3) {
			parts = append(parts, int32(p))
		}
	}
	// Logged before anything is sent, as never committed, so that every
	// record in the log belongs to a known transaction.
	ps.Log.begin(k, parts)
	begun := time.Now()
	// fail logs an error, saying whether the transaction had outlived its
	// timeout: then its coordinator may have aborted it and bumped the
	// epoch, and a fenced producer is Kafka's answer, not a bug.
	fail := func(what string, err error) {
		if time.Since(begun) > TxnTimeout {
			what += " past the transaction timeout"
		}
		ps.Log.fail(what, err)
	}
	if err := cl.BeginTransaction(); err != nil {
		fail("begin", err)
		return false
	}
	recs := make([]*kgo.Record, len(parts))
	for i, p := range parts {
		recs[i] = &kgo.Record{Topic: ps.topic, Partition: p, Value: TxnValue(k, i, len(parts))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), txnStepTimeout)
	defer cancel()
	produceErr := cl.ProduceSync(ctx, recs...).FirstErr()
	if produceErr != nil {
		fail("produce", produceErr)
	}
	if produceErr == nil && rng.Float64() < txnCommitShare {
		// From here the outcome is unknown until the commit is answered.
		ps.Log.end(k, TxnUnknown)
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			fail("commit", err)
			return false
		}
		ps.Log.end(k, TxnCommitted)
		return true
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		fail("abort", err)
		return false
	}
	// After a failed produce a new client, rather than trusting the state
	// of records franz-go may still hold.
	return produceErr == nil
}

// WaitStable waits until every partition of topic has its last stable
// offset at its high watermark: once the producers have stopped and their
// open transactions timed out, a partition held below is a hanging
// transaction, which read_committed consumers would never get past.
func WaitStable(t testing.TB, adm *kadm.Client, topic string, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return fmt.Errorf("end offsets: %w", err)
		}
		stable, err := adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = stable.Error()
		}
		if err != nil {
			return fmt.Errorf("last stable offsets: %w", err)
		}
		var behind []string
		ends.Each(func(o kadm.ListedOffset) {
			if s, ok := stable.Lookup(topic, o.Partition); !ok || s.Offset != o.Offset {
				behind = append(behind, fmt.Sprintf("%s-%d last stable %d, high watermark %d", topic, o.Partition, s.Offset, o.Offset))
			}
		})
		if len(behind) > 0 {
			return fmt.Errorf("a transaction still open (hanging?): %s", strings.Join(behind, "; "))
		}
		return nil
	})
}
