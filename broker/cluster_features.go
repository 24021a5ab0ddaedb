package broker

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka finalizes a feature only once every broker of the cluster serves
// it, and a client takes a finalized transaction.version 2 (KIP-890 part
// 2) as leave to skip AddPartitionsToTxn and AddOffsetsToTxn: the
// partition leaders and the group coordinator must then add them to the
// transaction themselves (Produce v12, TxnOffsetCommit v5). A
// ZooKeeper-mode Kafka 3.9 broker serves neither; in a mixed cluster it
// takes a transactional Produce v11 whose partition was never added, and
// its verification (KIP-890 part 1) answers TRANSACTION_ABORTABLE. So a
// Brook broker that is part of a cluster advertises transaction.version
// 2 finalized only while every other live broker answers ApiVersions
// with those versions; it asks each of them every featuresPollInterval.
// A broker without ZooKeeper has no other broker and finalizes it at once.

// featuresPollInterval is how often a broker asks the others which
// versions they serve.
const featuresPollInterval = time.Second

// featuresProbeTimeout bounds one broker's answer.
const featuresProbeTimeout = 5 * time.Second

// tv2Versions are the versions of the requests a producer of transaction
// version 2 sends that a broker must serve for it: its partitions' and
// offsets' implicit adds, and the epoch bump at every EndTxn.
var tv2Versions = map[int16]int16{
	int16(kmsg.Produce):            12,
	int16(kmsg.TxnOffsetCommit):    5,
	int16(kmsg.EndTxn):             5,
	int16(kmsg.AddPartitionsToTxn): 4,
}

// servesTV2 says whether a broker whose newest version of each key is
// peerMax serves producers of transaction version 2.
func servesTV2(peerMax map[int16]int16) bool {
	for key, v := range tv2Versions {
		if peerMax[key] < v {
			return false
		}
	}
	return true
}

// clusterFeatures is what the broker last learned of the others.
type clusterFeatures struct {
	tv2 atomic.Bool // every other live broker serves transaction version 2
}

// watchClusterFeatures asks every other live broker for its versions
// until ctx ends, and finalizes transaction.version 2 while all serve it.
func (b *Broker) watchClusterFeatures(ctx context.Context) {
	t := time.NewTicker(featuresPollInterval)
	defer t.Stop()
	for {
		tv2 := b.othersServeTV2(ctx)
		if b.features.tv2.Swap(tv2) != tv2 {
			if tv2 {
				b.logger.Info("transaction.version 2 finalized: every live broker serves it")
			} else {
				b.logger.Info("transaction.version 2 not finalized: a live broker does not serve it, or did not answer")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// othersServeTV2 asks each other live broker for its versions: false as
// soon as one does not serve transaction version 2 or does not answer,
// and false until the metadata lists this broker itself (before its first
// UpdateMetadata it knows none of the others).
func (b *Broker) othersServeTV2(ctx context.Context) bool {
	live := b.meta.liveBrokers(b.cfg.InterBrokerListenerName)
	if !slices.ContainsFunc(live, func(ep endpoint) bool { return ep.id == b.cfg.BrokerID }) {
		return false
	}
	for _, ep := range live {
		if ep.id == b.cfg.BrokerID {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, featuresProbeTimeout)
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "brook", "1"
		resp, err := b.peers.Request(pctx, ep.id, "features", req)
		cancel()
		if err != nil {
			return false
		}
		r := resp.(*kmsg.ApiVersionsResponse)
		if kerr.ErrorForCode(r.ErrorCode) != nil {
			return false
		}
		peerMax := make(map[int16]int16, len(r.ApiKeys))
		for _, k := range r.ApiKeys {
			peerMax[k.ApiKey] = k.MaxVersion
		}
		if !servesTV2(peerMax) {
			return false
		}
	}
	return true
}
