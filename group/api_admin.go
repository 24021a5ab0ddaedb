package group

import (
	"context"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupAuthorizedOperations is what KIP-430 reports for a group when no
// authorizer restricts it: READ, DELETE and DESCRIBE.
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8

// DescribeGroups serves DescribeGroups v0+. Unknown groups are Dead with
// no error before v6 and GROUP_ID_NOT_FOUND from v6 (KIP-1043).
func (c *Coordinator) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = math.MinInt32
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = groupAuthorizedOperations
		}
		var sum groupSummary
		var found bool
		code := c.step(id, func(s *shard, _ time.Time, _ *effects) { sum, found = s.describe(id) })
		if code != 0 {
			rg.ErrorCode = code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.ProtocolType, rg.Protocol = sum.state, sum.protocolType, sum.protocolName
		if !found && req.Version >= 6 {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			rg.ErrorMessage = strPtr("Group " + id + " not found.")
		}
		for _, m := range sum.members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.ClientID, rm.ClientHost = m.id, m.clientID, m.clientHost
			if m.instanceID != "" {
				rm.InstanceID = strPtr(m.instanceID)
			}
			rm.ProtocolMetadata, rm.MemberAssignment = m.metadata, m.assignment
			if rm.ProtocolMetadata == nil {
				rm.ProtocolMetadata = []byte{}
			}
			if rm.MemberAssignment == nil {
				rm.MemberAssignment = []byte{}
			}
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// ListGroups serves ListGroups v0+: the groups of every loaded partition,
// filtered by state (v4+) and type (v5+, always "classic" here), both
// case-insensitively. While a partition loads, the loaded groups are listed
// with COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	match := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	if req.Version < 4 {
		req.StatesFilter = nil
	}
	if req.Version < 5 {
		req.TypesFilter = nil
	}
	c.mu.Lock()
	parts := make([]*partitionState, 0, len(c.parts))
	for _, ps := range c.parts {
		parts = append(parts, ps)
	}
	c.mu.Unlock()
	for _, ps := range parts {
		ps.mu.Lock()
		if ps.loading {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		}
		if ps.closed || ps.sh == nil {
			ps.mu.Unlock()
			continue
		}
		for _, g := range ps.sh.groups {
			if g.state == StateDead || !match(req.StatesFilter, g.state.String()) || !match(req.TypesFilter, "classic") {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.id, g.protocolType, g.state.String(), "classic"
			resp.Groups = append(resp.Groups, lg)
		}
		ps.mu.Unlock()
	}
	sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	return resp
}

// DeleteGroups serves DeleteGroups v0+: only empty groups are deleted, with
// tombstones for their offsets and metadata.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	for _, id := range req.Groups {
		code := c.stepAndWrite(ctx, id, func(s *shard, now time.Time) (int16, []record) {
			return s.deleteGroup(id, now)
		})
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = id, code
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// stepAndWrite runs change on the group's shard and, when it produced
// records (tombstones), waits until they are written to __consumer_offsets:
// the answer of DeleteGroups and OffsetDelete. It returns the shard's code,
// the change's code, or the write's.
func (c *Coordinator) stepAndWrite(ctx context.Context, group string, change func(s *shard, now time.Time) (int16, []record)) int16 {
	var changeCode int16
	notify := make(chan error, 1)
	waiting := false
	code := c.step(group, func(s *shard, now time.Time, eff *effects) {
		var recs []record
		changeCode, recs = change(s, now)
		if len(recs) > 0 {
			eff.writes = append(eff.writes, write{records: recs, notify: notify})
			waiting = true
		}
	})
	if code == 0 {
		code = changeCode
	}
	if code == 0 && waiting {
		select {
		case err := <-notify:
			if err != nil {
				code = appendErrorCode(err)
			}
		case <-ctx.Done():
			code = kerr.RequestTimedOut.Code
		}
	}
	return code
}
