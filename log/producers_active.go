package log

import "sort"

// ActiveProducer is what a partition leader reports of one producer for
// DescribeProducers (Kafka's ProducerStateManager.activeProducers).
type ActiveProducer struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence is that of the producer's last retained batch, -1 when
	// none is retained (a producer known only from a marker).
	LastSequence  int32
	LastTimestamp int64
	// CoordinatorEpoch is that of the last marker written, -1 before any.
	CoordinatorEpoch int32
	// CurrentTxnStartOffset is the first offset of the producer's open
	// transaction, -1 when none is open.
	CurrentTxnStartOffset int64
}

// ActiveProducers lists the producers the log keeps state for, by producer
// id. Open transactions show here until a marker ends them, which is how
// the admin tools find hanging ones.
func (l *Log) ActiveProducers() []ActiveProducer {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	out := make([]ActiveProducer, 0, len(l.producers.producers))
	for id, e := range l.producers.producers {
		p := ActiveProducer{
			ProducerID: id, ProducerEpoch: e.Epoch, LastSequence: -1,
			LastTimestamp: e.LastTimestamp, CoordinatorEpoch: e.CoordinatorEpoch,
			CurrentTxnStartOffset: e.CurrentTxnFirstOffset,
		}
		if n := len(e.Batches); n > 0 {
			p.LastSequence = e.Batches[n-1].LastSeq
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
