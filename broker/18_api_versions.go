package broker

// ApiVersions, key 18, versions 0-4.
//
// v1 adds throttle_time_ms; v3 is flexible and carries the client's
// software name and version (validated, INVALID_REQUEST when malformed) and
// the feature fields. A version above 4 never reaches this handler: the
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
	return respond(resp)
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
