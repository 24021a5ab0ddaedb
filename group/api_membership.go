package group

import (
	"context"
	"time"

	"github.com/brook-mq/brook/internal/pending"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type clientInfoKey struct{}

type clientInfo struct{ clientID, clientHost string }

// WithClientInfo attaches the request header's client id and the client's
// address to ctx: JoinGroup stores them with the member (DescribeGroups and
// kafka-consumer-groups show them) and derives member ids from the client
// id. Kafka shows the host as "/<ip>".
func WithClientInfo(ctx context.Context, clientID, clientHost string) context.Context {
	return context.WithValue(ctx, clientInfoKey{}, clientInfo{clientID, clientHost})
}

func clientInfoFrom(ctx context.Context) clientInfo {
	ci, _ := ctx.Value(clientInfoKey{}).(clientInfo)
	return ci
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func strPtr(s string) *string { return &s }

// JoinGroup serves JoinGroup v0+ and blocks until the join completes, fails
// or ctx ends.
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	// A member whose client goes away stays in the rebalance; a client
	// that is still there rejoins on the code it gets.
	return c.StartJoinGroup(ctx, req).wait(ctx)
}

// pendingAnswer is a request that a later step of the coordinator answers
// (internal/pending): R is what the step hands over, A the response
// encoded from it, once.
type pendingAnswer[R any, A any] struct {
	*pending.Pending[R]
	version int16
	encode  func(int16, R) A
	answer  A
	done    bool
}

func newPendingAnswer[R any, A any](version int16, cancelled R, encode func(int16, R) A) pendingAnswer[R, A] {
	return pendingAnswer[R, A]{Pending: pending.New(cancelled), version: version, encode: encode}
}

// answered gives the answer before any step (a request-level error).
func (p *pendingAnswer[R, A]) answered(r R) {
	p.Pending = pending.Answered(r)
}

func (p *pendingAnswer[R, A]) encoded(r R) A {
	if !p.done {
		p.answer, p.done = p.encode(p.version, r), true
	}
	return p.answer
}

// poll returns the answer once the step gave it, the zero A before.
func (p *pendingAnswer[R, A]) poll() A {
	if r, ok := p.Pending.Poll(); ok {
		return p.encoded(r)
	}
	return p.answer
}

// wait blocks until the answer, or answers the cancelled result once ctx ends.
func (p *pendingAnswer[R, A]) wait(ctx context.Context) A {
	return p.encoded(p.Pending.Wait(ctx))
}

// PendingJoin is a JoinGroup in the group's rebalance: the form of
// JoinGroup for a driver that cannot block (the simulation). The join
// completes in a later step of the coordinator (another member's join, a
// Tick past the rebalance deadline).
type PendingJoin struct {
	pendingAnswer[joinResult, *kmsg.JoinGroupResponse]
}

// Poll returns the answer once the join completed or failed, nil while it
// waits. A caller that stops polling leaves the member in the rebalance,
// as a JoinGroup whose client went away does.
func (pj *PendingJoin) Poll() *kmsg.JoinGroupResponse {
	return pj.poll()
}

// StartJoinGroup validates a JoinGroup and enters the member into the
// group's rebalance; ctx carries the client info (WithClientInfo).
func (c *Coordinator) StartJoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *PendingJoin {
	pj := &PendingJoin{newPendingAnswer(req.Version, joinError(req.MemberID, kerr.RebalanceInProgress.Code), joinResponse)}
	fail := func(code int16) *PendingJoin {
		pj.answered(joinError(req.MemberID, code))
		return pj
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	ci := clientInfoFrom(ctx)
	rebalanceTimeout := req.RebalanceTimeoutMillis
	if req.Version == 0 {
		// v0 has no rebalance timeout; Kafka uses the session timeout.
		rebalanceTimeout = req.SessionTimeoutMillis
	}
	a := joinArgs{
		groupID:               req.Group,
		memberID:              req.MemberID,
		instanceID:            deref(req.InstanceID),
		requireKnownMemberID:  req.Version >= 4,
		supportSkipAssignment: req.Version >= 9,
		clientID:              ci.clientID,
		clientHost:            ci.clientHost,
		rebalanceTimeout:      time.Duration(rebalanceTimeout) * time.Millisecond,
		sessionTimeout:        time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		protocolType:          req.ProtocolType,
		waiter:                pj.Reply(),
	}
	for _, p := range req.Protocols {
		a.protocols = append(a.protocols, protocol{name: p.Name, metadata: p.Metadata})
	}
	if code := c.step(req.Group, func(s *shard, now time.Time, eff *effects) { s.join(a, now, eff) }); code != 0 {
		return fail(code)
	}
	return pj
}

func joinResponse(version int16, r joinResult) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = r.err
	resp.Generation = r.generation
	resp.MemberID = r.memberID
	resp.LeaderID = r.leader
	resp.SkipAssignment = r.skipAssignment
	// Protocol is nullable from v7 only; older versions send "".
	if r.protocolName != "" || version < 7 {
		resp.Protocol = strPtr(r.protocolName)
	}
	if r.protocolType != "" && r.err == 0 {
		resp.ProtocolType = strPtr(r.protocolType)
	}
	for _, m := range r.members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID = m.id
		if m.instanceID != "" {
			rm.InstanceID = strPtr(m.instanceID)
		}
		rm.ProtocolMetadata = m.metadata
		if rm.ProtocolMetadata == nil {
			rm.ProtocolMetadata = []byte{}
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// SyncGroup serves SyncGroup v0+; it blocks until the leader's assignment
// is stored (or the rebalance fails) or ctx ends.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	return c.StartSyncGroup(req).wait(ctx)
}

// PendingSync is a SyncGroup waiting for the leader's assignment and its
// write: SyncGroup for a driver that cannot block (see PendingJoin).
type PendingSync struct {
	pendingAnswer[syncResult, *kmsg.SyncGroupResponse]
}

// Poll returns the answer once the sync completed or failed, nil while it waits.
func (ps *PendingSync) Poll() *kmsg.SyncGroupResponse {
	return ps.poll()
}

// StartSyncGroup validates a SyncGroup and hands it to the group.
func (c *Coordinator) StartSyncGroup(req *kmsg.SyncGroupRequest) *PendingSync {
	ps := &PendingSync{newPendingAnswer(req.Version, syncResult{err: kerr.RebalanceInProgress.Code}, syncResponse)}
	if req.Group == "" {
		ps.answered(syncResult{err: kerr.InvalidGroupID.Code})
		return ps
	}
	a := syncArgs{
		groupID:      req.Group,
		generation:   req.Generation,
		memberID:     req.MemberID,
		instanceID:   deref(req.InstanceID),
		protocolType: req.ProtocolType,
		protocolName: req.Protocol,
		assignments:  make(map[string][]byte, len(req.GroupAssignment)),
		waiter:       ps.Reply(),
	}
	for _, ga := range req.GroupAssignment {
		a.assignments[ga.MemberID] = ga.MemberAssignment
	}
	code := c.step(req.Group, func(s *shard, now time.Time, eff *effects) { s.sync(a, now, eff) })
	switch code {
	case 0:
	case kerr.CoordinatorLoadInProgress.Code:
		// The rebalance state was lost with the old coordinator; old
		// clients do not know the load error but rejoin on this one.
		ps.answered(syncResult{err: kerr.RebalanceInProgress.Code})
	default:
		ps.answered(syncResult{err: code})
	}
	return ps
}

func syncResponse(version int16, r syncResult) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	resp.ErrorCode = r.err
	if r.protocolType != "" {
		resp.ProtocolType = strPtr(r.protocolType)
	}
	if r.protocolName != "" {
		resp.Protocol = strPtr(r.protocolName)
	}
	resp.MemberAssignment = r.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

// Heartbeat serves Heartbeat v0+.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	var hb int16
	code := c.step(req.Group, func(s *shard, now time.Time, _ *effects) {
		hb = s.heartbeat(req.Group, req.MemberID, deref(req.InstanceID), req.Generation, now)
	})
	switch code {
	case 0:
		resp.ErrorCode = hb
	case kerr.CoordinatorLoadInProgress.Code:
		// Kafka answers blindly while loading: the member is not
		// known yet, and failing it would only cause a rebalance.
	default:
		resp.ErrorCode = code
	}
	return resp
}

// LeaveGroup serves LeaveGroup v0+ (v3+ removes a batch of members, also
// by group.instance.id alone).
func (c *Coordinator) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	var leaving []leavingMember
	if req.Version < 3 {
		leaving = []leavingMember{{memberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			leaving = append(leaving, leavingMember{memberID: m.MemberID, instanceID: deref(m.InstanceID)})
		}
	}
	var top int16
	var codes []int16
	if code := c.step(req.Group, func(s *shard, now time.Time, eff *effects) {
		top, codes = s.leave(req.Group, leaving, now, eff)
	}); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	resp.ErrorCode = top
	if req.Version < 3 {
		// One member, no per-member array: its error is the response's.
		if top == 0 && len(codes) == 1 {
			resp.ErrorCode = codes[0]
		}
		return resp
	}
	for i, l := range req.Members {
		if i >= len(codes) {
			break
		}
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = l.MemberID
		rm.InstanceID = l.InstanceID
		rm.ErrorCode = codes[i]
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
