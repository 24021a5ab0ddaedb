package replica

import "github.com/brook-mq/brook/log"

// FetchState is what a fetch answer for the partition depends on besides
// the request, the topic's metadata and ACLs: who leads at which epoch,
// and the log's offsets. A fetch at the read bound (nothing to read) of a
// partition whose FetchState is unchanged gets the same answer as last
// time, which is how the broker's incremental fetch sessions skip the
// partitions that did not change. Every role change, including the
// removal of a partition from the manager (StopReplica, an offline log
// dir), goes through become and so changes Leader or LeaderEpoch.
type FetchState struct {
	Leader, LeaderEpoch int32
	log.Offsets
}

// FetchState snapshots the partition's FetchState.
func (p *Partition) FetchState() FetchState {
	p.mu.Lock()
	leader, epoch := p.leader, p.leaderEpoch
	p.mu.Unlock()
	return FetchState{Leader: leader, LeaderEpoch: epoch, Offsets: p.log.Offsets()}
}
