package log

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/brook-mq/brook/protocol/batch"
)

// writeCountingFS counts the writes to segment (.log) files.
type writeCountingFS struct {
	OSFS
	mu     sync.Mutex
	writes int
}

type writeCountingFile struct {
	*os.File
	fs *writeCountingFS
}

func (f *writeCountingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	of, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(name, ".log") {
		return of, nil
	}
	return writeCountingFile{of, f}, nil
}

func (f writeCountingFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.writes++
	f.fs.mu.Unlock()
	return f.File.WriteAt(b, off)
}

func (f *writeCountingFS) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// TestAppendAsFollowerOneWrite: a follower appends the data batches of one
// fetch answer to a segment in one write (Kafka writes a fetched record
// set at once), and ends up with the leader's log all the same: the same
// bytes at the same offsets, read through its indexes, the same epochs and
// producers, before and after a restart. Across segment rolls it writes
// once per segment the batches land in. Batch by batch, it wrote once per
// batch.
func TestAppendAsFollowerOneWrite(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     Config
		batches int
		// txns: every fourth batch is a transaction's, ended by an
		// abort or a commit marker (control batches go alone).
		txns bool
		// writes is how many writes the append takes; 0: one per
		// segment.
		writes int
	}{
		{"one segment", DefaultConfig(), 12, false, 0},
		{"rolling", smallConfig(), 40, false, 0},
		// 15 data batches and 3 markers: 4 data batches (the last a
		// transaction's) in one write, its marker alone, three times,
		// then the last 3 data batches.
		{"transactions", DefaultConfig(), 15, true, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := newManualClock()
			leader := openTestLog(t, filepath.Join(t.TempDir(), "leader-0"), c.cfg, clock, Options{})
			defer leader.Close()
			producer := batchSpec{baseTimestamp: clock.Now().UnixMilli(), producerID: 7, producerEpoch: 0}
			for i := range c.batches {
				epoch := int32(1 + i/(c.batches/3)) // three leader epochs
				spec := plainSpec(clock.Now().UnixMilli())
				if i%2 == 0 {
					spec, producer.baseSequence = producer, producer.baseSequence+3
				}
				if c.txns && i%4 == 3 {
					spec = batchSpec{baseTimestamp: clock.Now().UnixMilli(), producerID: 9, producerEpoch: 0, baseSequence: int32(3 * (i / 4)), attributes: batch.TransactionalBit}
				}
				mustAppend(t, leader, buildBatch(spec, nRecords(3, 100)), epoch)
				if c.txns && i%4 == 3 {
					if _, err := leader.AppendTxnMarker(TxnMarker{ProducerID: 9, ProducerEpoch: 0, Commit: i%8 == 7}, epoch); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The leader's log, segment after segment, as one answer.
			var all []byte
			for o := int64(0); o < leader.LogEndOffset(); {
				s := mustRead(t, leader, o)
				all = append(all, readAllSlice(t, s)...)
				o = s.LastOffset + 1
			}

			dir := filepath.Join(t.TempDir(), "follower-0")
			fsys := &writeCountingFS{}
			follower := openTestLog(t, dir, c.cfg, clock, Options{FS: fsys})
			info, err := follower.AppendAsFollower(all)
			if err != nil {
				t.Fatal(err)
			}
			if info.FirstOffset != 0 || info.LastOffset != leader.LogEndOffset()-1 {
				t.Fatalf("append info %+v, want offsets 0..%d", info, leader.LogEndOffset()-1)
			}
			want := c.writes
			if want == 0 {
				want = follower.NumSegments()
			}
			if got := fsys.count(); got != want {
				t.Errorf("%d writes to segment files for %d batches in %d segments, want %d", got, c.batches, follower.NumSegments(), want)
			}
			if follower.NumSegments() != leader.NumSegments() {
				t.Errorf("follower has %d segments, the leader %d", follower.NumSegments(), leader.NumSegments())
			}
			sameLog(t, "after the append", leader, follower)
			if err := follower.Close(); err != nil {
				t.Fatal(err)
			}
			reopened := openTestLog(t, dir, c.cfg, clock, Options{})
			defer reopened.Close()
			sameLog(t, "after a restart", leader, reopened)
		})
	}
}

func mustRead(t *testing.T, l *Log, offset int64) Slice {
	t.Helper()
	s, err := l.Read(offset, 1<<30, l.LogEndOffset(), true)
	if err != nil {
		t.Fatalf("read at %d: %v", offset, err)
	}
	return s
}

// sameLog compares what a follower's log serves with the leader's: the
// read at every offset (found through the offset index), the epochs and
// the producers.
func sameLog(t *testing.T, when string, leader, follower *Log) {
	t.Helper()
	if follower.LogEndOffset() != leader.LogEndOffset() {
		t.Fatalf("%s: log end offset %d, the leader's %d", when, follower.LogEndOffset(), leader.LogEndOffset())
	}
	for o := int64(0); o < leader.LogEndOffset(); o++ {
		want := readAllSlice(t, mustRead(t, leader, o))
		if got := readAllSlice(t, mustRead(t, follower, o)); !bytes.Equal(got, want) {
			t.Fatalf("%s: read at %d: %d bytes, the leader's %d (or different)", when, o, len(got), len(want))
		}
	}
	for e := int32(0); e <= 4; e++ {
		ge, go_ := follower.EndOffsetForEpoch(e)
		we, wo := leader.EndOffsetForEpoch(e)
		if ge != we || go_ != wo {
			t.Errorf("%s: end of epoch %d: %d/%d, the leader's %d/%d", when, e, ge, go_, we, wo)
		}
	}
	if got, want := follower.AbortedTransactions(0, leader.LogEndOffset()), leader.AbortedTransactions(0, leader.LogEndOffset()); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: aborted transactions %+v, the leader's %+v", when, got, want)
	}
	if got, want := follower.ActiveProducers(), leader.ActiveProducers(); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: producers %+v, the leader's %+v", when, got, want)
	}
}
