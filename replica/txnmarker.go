package replica

import "github.com/brook-mq/brook/log"

// AppendTxnMarkerAsLeader writes an end-transaction marker for the
// transaction coordinator (WriteTxnMarkers). Kafka appends markers with
// acks=all, so the ISR is checked against minISR first; the caller waits
// for the HW with WaitForCommit and the returned term.
func (p *Partition) AppendTxnMarkerAsLeader(m log.TxnMarker, minISR int) (log.AppendInfo, int32, error) {
	return p.appendAsLeader(-1, minISR, func(epoch int32) (log.AppendInfo, error) {
		return p.log.AppendTxnMarker(m, epoch)
	})
}
