package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/protocol"
)

// peers sends requests to other brokers over their inter-broker listener:
// the controller's LeaderAndISR, UpdateMetadata and StopReplica, leaders'
// AlterPartition and ControlledShutdown to the controller, and followers'
// fetches. One connection per broker and purpose, requests on it one at a
// time, as Kafka's controller channel and replica fetchers do.
type peers struct {
	b *Broker

	mu    sync.Mutex
	conns map[peerKey]*peerConn
	// mechanism authenticates new connections when the inter-broker
	// listener uses SASL; nil otherwise.
	mechanism sasl.Mechanism
}

type peerKey struct {
	id      int32
	purpose string
}

type peerConn struct {
	mu   sync.Mutex
	nc   net.Conn
	corr int32
	buf  []byte
	// lastUsed is when nc last carried a request and its answer.
	lastUsed time.Time
	// reauthBy is when nc's SASL session should be renewed by dialing
	// again (before the other broker would close it); zero: never.
	reauthBy time.Time
	// peerMax is the newest version of each key the other broker serves,
	// from ApiVersions on nc.
	peerMax map[int16]int16
}

// errNoEndpoint means the broker is not registered (not alive).
var errNoEndpoint = errors.New("broker: no inter-broker endpoint")

// peerDialTimeout bounds connecting to another broker.
const peerDialTimeout = 10 * time.Second

// Request sends req to broker id on the connection kept for purpose and
// returns its response. The version is the newest both brokers serve: the
// other one may be a Kafka broker of an older release (a mixed cluster),
// so each new connection asks it with ApiVersions first, as Kafka's
// clients do. A failed request closes its connection; the next one dials
// again.
func (p *peers) Request(ctx context.Context, id int32, purpose string, req kmsg.Request) (kmsg.Response, error) {
	p.mu.Lock()
	if p.conns == nil {
		p.conns = map[peerKey]*peerConn{}
	}
	key := peerKey{id, purpose}
	pc := p.conns[key]
	if pc == nil {
		pc = &peerConn{}
		p.conns[key] = pc
	}
	p.mu.Unlock()

	pc.mu.Lock()
	defer pc.mu.Unlock()
	// The other broker closes a connection idle for its
	// connections.max.idle.ms; like Kafka's clients, which close theirs
	// first, a connection kept idle for half of ours is dialed again.
	if pc.nc != nil && (time.Since(pc.lastUsed) > peerMaxIdle(p.b.cfg.ConnectionsMaxIdle) || (!pc.reauthBy.IsZero() && time.Now().After(pc.reauthBy))) {
		pc.nc.Close()
		pc.nc = nil
	}
	for attempt := 0; ; attempt++ {
		reused := pc.nc != nil
		if pc.nc == nil {
			addr, err := p.addrOf(ctx, id)
			if err != nil {
				return nil, err
			}
			nc, err := p.b.dialPeer(ctx, addr)
			if err != nil {
				return nil, fmt.Errorf("dial broker %d at %s: %w", id, addr, err)
			}
			pc.nc, pc.reauthBy, pc.peerMax = nc, time.Time{}, nil
			if p.mechanism != nil {
				lifetime, err := pc.authenticate(ctx, p.b.clientID(), p.mechanism)
				if err != nil {
					nc.Close()
					pc.nc = nil
					return nil, fmt.Errorf("authenticate to broker %d at %s: %w", id, addr, err)
				}
				if lifetime > 0 {
					// Kafka's clients re-authenticate at 85-95% of the
					// lifetime; a peer connection is dialed again instead.
					pc.reauthBy = time.Now().Add(lifetime * 85 / 100)
				}
			}
		}
		if pc.peerMax == nil {
			peerMax, err := pc.apiVersions(ctx, p.b.clientID())
			if err != nil {
				pc.nc.Close()
				pc.nc = nil
				return nil, fmt.Errorf("ApiVersions to broker %d: %w", id, err)
			}
			pc.peerMax = peerMax
		}
		if h, ok := p.b.handlers[req.Key()]; ok {
			req.SetVersion(negotiatedVersion(h.max, pc.peerMax, req.Key()))
		}
		resp, err := pc.roundTrip(ctx, p.b.clientID(), req)
		if err == nil {
			pc.lastUsed = time.Now()
			return resp, nil
		}
		pc.nc.Close()
		pc.nc = nil
		// A kept connection that the other broker closed (idle with a
		// shorter limit) ends before any answer; the request reached no
		// handler, so it goes once more on a new connection.
		if reused && attempt == 0 && ctx.Err() == nil && closedBeforeAnswer(err) {
			continue
		}
		return nil, fmt.Errorf("%s to broker %d: %w", kmsg.NameForKey(req.Key()), id, err)
	}
}

// apiVersions asks the other broker which versions it serves (ApiVersions
// v3, which Kafka serves since 2.4 and Brook serves).
func (pc *peerConn) apiVersions(ctx context.Context, clientID string) (map[int16]int16, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "brook", "1"
	resp, err := pc.roundTrip(ctx, clientID, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return nil, err
	}
	out := make(map[int16]int16, len(r.ApiKeys))
	for _, k := range r.ApiKeys {
		out[k.ApiKey] = k.MaxVersion
	}
	return out, nil
}

// negotiatedVersion is the version to send key at: ours, or the other
// broker's newest when that is older. A key it does not list goes at ours
// (and fails there, as before).
func negotiatedVersion(own int16, peerMax map[int16]int16, key int16) int16 {
	if v, ok := peerMax[key]; ok && v < own {
		return v
	}
	return own
}

// peerMaxIdle is how long a kept inter-broker connection may stay unused:
// half of connections.max.idle.ms, at most Kafka clients' 9 minutes.
func peerMaxIdle(brokerMaxIdle time.Duration) time.Duration {
	const clientMaxIdle = 9 * time.Minute
	if brokerMaxIdle <= 0 {
		return clientMaxIdle
	}
	return min(brokerMaxIdle/2, clientMaxIdle)
}

// closedBeforeAnswer reports whether a round trip failed because the
// connection was already closed: no byte of an answer came back.
func closedBeforeAnswer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (pc *peerConn) roundTrip(ctx context.Context, clientID string, req kmsg.Request) (kmsg.Response, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Time{}
	}
	pc.nc.SetDeadline(deadline)
	// The callback may still run after roundTrip returned and Request
	// cleared pc.nc, so it holds the connection itself.
	nc := pc.nc
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	pc.corr++
	pc.buf = kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(pc.buf[:0], req, pc.corr)
	if req.Key() == protocol.StopReplicaKey {
		// Into Kafka's field order (protocol/stop_replica.go); the body is
		// the frame's tail.
		body := pc.buf[len(pc.buf)-len(req.AppendTo(nil)):]
		protocol.StopReplicaToKafka(req.Key(), req.GetVersion(), body)
	}
	if _, err := pc.nc.Write(pc.buf); err != nil {
		return nil, err
	}
	frame, err := protocol.ReadResponseFrame(pc.nc, nil, 1<<30)
	if err != nil {
		return nil, err
	}
	if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != pc.corr {
		return nil, errors.New("response with the wrong correlation id")
	}
	resp := req.ResponseKind()
	body := frame[4:]
	if resp.IsFlexible() && req.Key() != protocol.ApiVersionsKey {
		if len(body) == 0 {
			return nil, errors.New("truncated response header")
		}
		// Response header v1: a tagged-field section; Brook sends none,
		// but a count of zero is one byte and anything else is skipped.
		var err error
		if body, err = skipResponseTags(body); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	return resp, nil
}

func skipResponseTags(b []byte) ([]byte, error) {
	if b[0] == 0 {
		return b[1:], nil
	}
	return nil, errors.New("unexpected tagged fields in a response header")
}

// addrOf finds a broker's inter-broker endpoint: from the metadata cache,
// or from its registration when the cache does not know it yet (the
// controller talks to brokers before they have any metadata).
func (p *peers) addrOf(ctx context.Context, id int32) (string, error) {
	listener := p.b.cfg.InterBrokerListenerName
	for _, ep := range p.b.meta.liveBrokers(listener) {
		if ep.id == id {
			return net.JoinHostPort(ep.host, strconv.Itoa(int(ep.port))), nil
		}
	}
	live, err := controller.LiveBrokers(ctx, p.b.store)
	if err != nil {
		return "", fmt.Errorf("look up broker %d: %w", id, err)
	}
	for _, bi := range live {
		if bi.ID != id {
			continue
		}
		for _, ep := range bi.Endpoints {
			if ep.Name == listener {
				return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
			}
		}
	}
	return "", fmt.Errorf("%w: broker %d on listener %s", errNoEndpoint, id, listener)
}

// close closes every peer connection.
func (p *peers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.conns {
		pc.mu.Lock()
		if pc.nc != nil {
			pc.nc.Close()
			pc.nc = nil
		}
		pc.mu.Unlock()
	}
}

func (b *Broker) clientID() string { return "brook-broker-" + strconv.Itoa(int(b.cfg.BrokerID)) }
