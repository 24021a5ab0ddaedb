package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListGroupsV5 serves KIP-848's ListGroups v5, as Kafka 3.9 does: each
// group carries its type, "classic" for every group here, and the types
// filter keeps only the groups of the types named.
func TestListGroupsV5(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 1, nil)
	readyCoordinator(t, tb, "listed")
	wantCodes(t, "commit", commitRaw(t, tb, 8, "listed", "", nil, -1, "", 1), 1, noError)

	list := func(types ...string) []kmsg.ListGroupsResponseGroup {
		t.Helper()
		req := kmsg.NewPtrListGroupsRequest()
		req.SetVersion(5)
		req.TypesFilter = types
		resp := tb.roundTrip(req).(*kmsg.ListGroupsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("ListGroups v5 %v: error %d", types, resp.ErrorCode)
		}
		return resp.Groups
	}
	for _, types := range [][]string{nil, {"classic"}, {"Classic", "consumer"}} {
		gs := list(types...)
		i := slices.IndexFunc(gs, func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == "listed" })
		if i < 0 || gs[i].GroupType != "classic" || gs[i].GroupState != "Empty" {
			t.Fatalf("ListGroups v5 types %v: %+v, want group listed as a classic Empty group", types, gs)
		}
	}
	if gs := list("consumer"); len(gs) != 0 {
		t.Fatalf("ListGroups v5 for consumer groups only: %+v, want none", gs)
	}
}
