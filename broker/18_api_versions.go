package broker

// ApiVersions, key 18, versions 0-4.
//
// v1 adds throttle_time_ms; v3 is flexible and carries the client's
// software name and version (validated, INVALID_REQUEST when malformed) and
// the feature fields: transaction.version, supported 0-2 and finalized at 2
// while every live broker serves it (cluster_features.go). A version above 4 never reaches this handler: the
// connection loop answers it with a v0 UNSUPPORTED_VERSION body (KIP-511).

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// softwareNamePattern is the shape KIP-511 requires of client_software_name
// and client_software_version.
var softwareNamePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (b *Broker) handleApiVersions(_ context.Context, _ *request, req *kmsg.ApiVersionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!softwareNamePattern.MatchString(req.ClientSoftwareName) || !softwareNamePattern.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	resp.ApiKeys = b.apiKeys()
	resp.FinalizedFeaturesEpoch = -1
	if req.Version >= 3 {
		setFeatures(resp, b.features.tv2.Load())
	}
	return respond(resp)
}

// Features Brook advertises (KIP-584). transaction.version 2 (KIP-890
// part 2) is what Kafka 4.x producers look for: with it they bump the
// epoch at every EndTxn (v5) and let partition leaders add partitions
// (Produce v12, TxnOffsetCommit v5); Kafka 3.9 clients do not read it and
// keep version 1, which Brook serves alike. Every Brook broker serves
// version 2; each advertises it finalized while every other live broker
// serves it too (a Kafka 3.9 broker of a mixed cluster does not), all at
// the same epoch: a client takes the finalized features of the highest
// epoch any broker answered, and an epoch of -1 would make it ignore
// them.
const (
	transactionVersionFeature = "transaction.version"
	transactionVersionMax     = 2
	finalizedFeaturesEpoch    = 1
)

// setFeatures fills the feature fields: transaction.version 2 is
// finalized only when tv2 says every live broker serves it.
func setFeatures(resp *kmsg.ApiVersionsResponse, tv2 bool) {
	sf := kmsg.NewApiVersionsResponseSupportedFeature()
	sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersionFeature, 0, transactionVersionMax
	resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	if tv2 {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersionFeature, transactionVersionMax, transactionVersionMax
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
}

// unsupportedApiVersions is the KIP-511 answer to an ApiVersions request
// newer than ours: a v0 body with UNSUPPORTED_VERSION that lists only
// ApiVersions, from which the client picks a version to retry with.
func (b *Broker) unsupportedApiVersions() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	h := b.handlers[18]
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = 18, h.min, h.max
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{k}
	return resp
}
