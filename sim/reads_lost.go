package sim

import (
	"slices"

	"github.com/brook-mq/brook/log"
)

// Consumers under power failures. A consumer may read a record below the
// HW that is lost afterwards as Kafka loses it: power failures took it
// from every in-sync replica (acks=all does not fsync; durability rests
// on the replicas), or the controller elected a replica whose log a power
// failure cut and that it had not seen bounce, and a leader that does not
// know it was deposed may serve such a record even after it is lost. The
// consumer may then read the offset again with the record written there
// since. That is no broken read path, and the consumer checks forgive it,
// but only it: a delivery that disagrees with another delivery of its
// offset, or with the final log, is a legitimate loss only if it was
// committed when read (below the serving leader's HW: a read past the HW
// stays a failure) and, at a loss event — a power failure, or an election
// — some broker held the record (offset and leader epoch) while no
// replica the partition's history goes on from did (after a power
// failure, the ISR members; at an election, the new leader and the live
// ISR members, as durability.go judges acknowledged records).

// readInfo is how a delivered record was read: the leader epoch of its
// batch, and whether it was below the serving leader's HW then.
type readInfo struct {
	epoch     int32
	committed bool
}

// logShape is what a log held at a loss event: its epochs' end offsets,
// in order (the last one's is the log end offset).
type logShape []epochEnd

type epochEnd struct {
	epoch int32
	end   int64
}

func shapeOf(l *log.Log) logShape {
	var s logShape
	for e := int32(0); e <= l.LatestEpoch(); e++ {
		if got, end := l.EndOffsetForEpoch(e); got == e {
			s = append(s, epochEnd{e, end})
		}
	}
	return s
}

// holds reports whether the log held offset in epoch.
func (s logShape) holds(offset int64, epoch int32) bool {
	for _, e := range s {
		if offset < e.end {
			return e.epoch == epoch
		}
	}
	return false
}

// lossEvent is the logs at one loss event: those the partition's history
// goes on from, and all the others (the brokers' logs and what their last
// power failures found).
type lossEvent struct {
	survivors, others []logShape
}

// noteLossEvent records the logs of part at a power failure or an
// election; survivor picks the brokers whose logs the history goes on from.
func (w *consumerWorkload) noteLossEvent(part int32, survivor func(*Broker) bool) {
	var ev lossEvent
	tp := log.TopicPartition{Topic: topic, Partition: part}
	for _, b := range w.c.brokers {
		if b.logs != nil {
			if l := b.logs.Get(tp); l != nil {
				if survivor(b) {
					ev.survivors = append(ev.survivors, shapeOf(l))
				} else {
					ev.others = append(ev.others, shapeOf(l))
				}
			}
		}
		if b.beforeCrash != nil {
			if l := b.beforeCrash.Get(tp); l != nil {
				ev.others = append(ev.others, shapeOf(l))
			}
		}
	}
	w.losses[part] = append(w.losses[part], ev)
}

// lostLegitimately reports whether a record delivered at off, read as
// info, was committed and then lost at a loss event.
func (w *consumerWorkload) lostLegitimately(part int32, off int64, info readInfo) bool {
	if !info.committed {
		return false
	}
	held := func(s logShape) bool { return s.holds(off, info.epoch) }
	for _, ev := range w.losses[part] {
		if !slices.ContainsFunc(ev.survivors, held) && slices.ContainsFunc(ev.others, held) {
			return true
		}
	}
	return false
}
