package cluster

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/workload"
)

const (
	// txnInterval paces each transactional producer between transactions:
	// a steady stream of commits and aborts through every fault, light
	// enough for a shared 2-core machine.
	txnInterval = 50 * time.Millisecond
	// txnCommitShare is the share of transactions asked to commit.
	txnCommitShare = 0.6
	// txnTimeout is the producers' transaction.timeout.ms: a transaction
	// whose client gave up is aborted by its coordinator after it.
	txnTimeout = 10 * time.Second
	// txnStepTimeout bounds a produce or EndTxn under chaos; the client
	// retries within it. Past it the transaction's outcome is unknown.
	txnStepTimeout = time.Minute
)

// txnLog gathers what the producers sent and learned, by transaction.
type txnLog struct {
	mu         sync.Mutex
	txns       map[txnKey]txnInfo
	errs       map[string]int // error text -> count
	lastCommit time.Time      // when the last commit was acknowledged
}

func (l *txnLog) begin(k txnKey, partitions []int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.txns[k] = txnInfo{partitions: partitions, outcome: txnAborted}
}

func (l *txnLog) end(k txnKey, o txnOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	info := l.txns[k]
	info.outcome = o
	l.txns[k] = info
	if o == txnCommitted {
		l.lastCommit = time.Now()
	}
}

func (l *txnLog) fail(what string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[what+": "+err.Error()]++
}

func (l *txnLog) snapshot() map[txnKey]txnInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.txns)
}

func (l *txnLog) errors() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.errs)
}

func (l *txnLog) lastCommitAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastCommit
}

// txnProducers are the transactional producers of the chaos test, one
// goroutine and transactional id each.
type txnProducers struct {
	bootstrap string
	topic     string
	n         int
	seed      uint64
	log       *txnLog
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

func newTxnProducers(bootstrap, topic string, n int, seed uint64) *txnProducers {
	return &txnProducers{bootstrap: bootstrap, topic: topic, n: n, seed: seed,
		log: &txnLog{txns: map[txnKey]txnInfo{}, errs: map[string]int{}}, cancel: func() {}}
}

func (ps *txnProducers) txnIDs() []string {
	var ids []string
	for i := range ps.n {
		ids = append(ids, ps.txnID(i))
	}
	return ids
}

func (ps *txnProducers) txnID(i int) string { return fmt.Sprintf("chaos-txn-%d", i) }

func (ps *txnProducers) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ps.cancel = cancel
	t.Cleanup(ps.stop)
	for i := range ps.n {
		rng := rand.New(rand.NewPCG(ps.seed, uint64(i)+1))
		ps.wg.Go(func() { ps.run(ctx, i, rng) })
	}
}

// stop ends the producers after their current transaction; it is safe to
// call twice.
func (ps *txnProducers) stop() {
	ps.cancel()
	ps.wg.Wait()
}

// run sends transactions until ctx ends. After any error the client is
// closed and a new one made: its InitProducerId bumps the epoch, which
// fences the old one and ends whatever it left open.
func (ps *txnProducers) run(ctx context.Context, i int, rng *rand.Rand) {
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
				ps.log.fail("client", err)
				return
			}
		}
		if !ps.transact(cl, txnKey{i, txn}, rng) {
			cl.Close()
			cl = nil
		}
		workload.Wait(txnInterval)
	}
}

func (ps *txnProducers) client(i int) (*kgo.Client, error) {
	opts := append(clientLog(),
		kgo.SeedBrokers(strings.Split(ps.bootstrap, ",")...),
		kgo.TransactionalID(ps.txnID(i)),
		kgo.TransactionTimeout(txnTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.DialTimeout(2*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	return kgo.NewClient(opts...)
}

// transact runs one transaction: two to four partitions, one to three
// records each, then commit or abort at random. It records the outcome
// and returns whether the client is still fit for the next one.
func (ps *txnProducers) transact(cl *kgo.Client, k txnKey, rng *rand.Rand) bool {
	var parts []int32
	for _, p := range rng.Perm(chaosPartitions)[:2+rng.IntN(3)] {
		for range 1 + rng.IntN(3) {
			parts = append(parts, int32(p))
		}
	}
	// Logged before anything is sent, as never committed, so that every
	// record in the log belongs to a known transaction.
	ps.log.begin(k, parts)
	begun := time.Now()
	// fail logs an error, saying whether the transaction had outlived its
	// timeout: then its coordinator may have aborted it and bumped the
	// epoch, and a fenced producer is Kafka's answer, not a bug.
	fail := func(what string, err error) {
		if time.Since(begun) > txnTimeout {
			what += " past the transaction timeout"
		}
		ps.log.fail(what, err)
	}
	if err := cl.BeginTransaction(); err != nil {
		fail("begin", err)
		return false
	}
	recs := make([]*kgo.Record, len(parts))
	for i, p := range parts {
		recs[i] = &kgo.Record{Topic: ps.topic, Partition: p, Value: txnValue(k, i, len(parts))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), txnStepTimeout)
	defer cancel()
	produceErr := cl.ProduceSync(ctx, recs...).FirstErr()
	if produceErr != nil {
		fail("produce", produceErr)
	}
	if produceErr == nil && rng.Float64() < txnCommitShare {
		// From here the outcome is unknown until the commit is answered.
		ps.log.end(k, txnUnknown)
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			fail("commit", err)
			return false
		}
		ps.log.end(k, txnCommitted)
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
