package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/coordhash"
	"github.com/brook-mq/brook/internal/testutil"
)

// markerRecorder stands in for the log side's WriteTxnMarkers handler: it
// records the requests the transaction coordinator sends in process,
// answers each partition with success and completes transactional offsets
// of __consumer_offsets partitions, without writing control batches.
type markerRecorder struct {
	mu   sync.Mutex
	reqs []*kmsg.WriteTxnMarkersRequest
}

func (m *markerRecorder) install(b *Broker) {
	b.handlers[27] = handler{0, 2, typed(func(_ context.Context, _ *request, req *kmsg.WriteTxnMarkersRequest) (reply, error) {
		m.mu.Lock()
		m.reqs = append(m.reqs, req)
		m.mu.Unlock()
		resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
		for _, mk := range req.Markers {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = mk.ProducerID
			for _, t := range mk.Topics {
				rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					rp.Partition = p
					rt.Partitions = append(rt.Partitions, rp)
					if t.Topic == consumerOffsetsTopic {
						// What the log side's handler does once the
						// marker is committed there.
						b.groups.OnTxnMarker(p, mk.ProducerID, mk.Committed)
					}
				}
				rm.Topics = append(rm.Topics, rt)
			}
			resp.Markers = append(resp.Markers, rm)
		}
		return respond(resp)
	})}
}

func (m *markerRecorder) sent() []*kmsg.WriteTxnMarkersRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

func startTxnBroker(t *testing.T) (*testBroker, *markerRecorder) {
	t.Helper()
	rec := &markerRecorder{}
	tb := startBrokerWith(t, map[string]string{"transaction.state.log.num.partitions": "3"}, rec.install)
	return tb, rec
}

// initTxn finds the id's coordinator (creating __transaction_state) and
// sends InitProducerId until the coordinator has loaded.
func initTxn(t *testing.T, tb *testBroker, version int16, txnID string) *kmsg.InitProducerIDResponse {
	t.Helper()
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.SetVersion(3)
	find.CoordinatorType = coordinatorTransaction
	find.CoordinatorKey = txnID
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(version)
	init.TransactionalID = kmsg.StringPtr(txnID)
	init.TransactionTimeoutMillis = 60_000
	var resp *kmsg.InitProducerIDResponse
	testutil.Eventually(t, 30*time.Second, func() error {
		fc := tb.roundTrip(find).(*kmsg.FindCoordinatorResponse)
		if fc.ErrorCode != 0 {
			return fmt.Errorf("find coordinator: %v", kerr.ErrorForCode(fc.ErrorCode))
		}
		if fc.NodeID != 0 {
			return fmt.Errorf("coordinator %d", fc.NodeID)
		}
		resp = tb.roundTrip(init).(*kmsg.InitProducerIDResponse)
		switch resp.ErrorCode {
		case kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code, kerr.ConcurrentTransactions.Code:
			return fmt.Errorf("init: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return nil
	})
	return resp
}

func addPartitionsRaw(t *testing.T, tb *testBroker, version int16, txnID string, pid int64, epoch int16, topic string, parts ...int32) map[string][]int16 {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = txnID, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := tb.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
	out := map[string][]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[t.Topic] = append(out[t.Topic], p.ErrorCode)
		}
	}
	return out
}

func endTxnRaw(tb *testBroker, version int16, txnID string, pid int64, epoch int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txnID, pid, epoch, commit
	return tb.roundTrip(req).(*kmsg.EndTxnResponse).ErrorCode
}

func describeTxn(tb *testBroker, txnID string) kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{txnID}
	return tb.roundTrip(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
}

func waitTxnState(t *testing.T, tb *testBroker, txnID, state string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	var d kmsg.DescribeTransactionsResponseTransactionState
	testutil.Eventually(t, 30*time.Second, func() error {
		d = describeTxn(tb, txnID)
		if d.ErrorCode != 0 || d.State != state {
			return fmt.Errorf("%s: %v %s, want %s", txnID, kerr.ErrorForCode(d.ErrorCode), d.State, state)
		}
		return nil
	})
	return d
}

func TestTransactionCommitThroughBroker(t *testing.T) {
	tb, rec := startTxnBroker(t)
	tb.createTopic("tt", 2, nil)
	init := initTxn(t, tb, 4, "tx")
	if init.ErrorCode != 0 || init.ProducerID < 0 || init.ProducerEpoch != 0 {
		t.Fatalf("init: %+v", init)
	}
	pid := init.ProducerID

	got := addPartitionsRaw(t, tb, 3, "tx", pid, 0, "nope", 0)
	if !slices.Equal(got["nope"], []int16{kerr.UnknownTopicOrPartition.Code}) {
		t.Fatalf("unknown topic: %v", got)
	}
	got = addPartitionsRaw(t, tb, 3, "tx", pid, 0, "tt", 0, 1)
	if !slices.Equal(got["tt"], []int16{0, 0}) {
		t.Fatalf("add partitions: %v", got)
	}
	// A transactional consumer has found its group's coordinator first,
	// so __consumer_offsets exists and its partition gets a marker.
	readyCoordinator(t, tb, "g")
	off := kmsg.NewPtrAddOffsetsToTxnRequest()
	off.SetVersion(3)
	off.TransactionalID, off.ProducerID, off.ProducerEpoch, off.Group = "tx", pid, 0, "g"
	wantCode(t, "add offsets", tb.roundTrip(off).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, noError)

	d := describeTxn(tb, "tx")
	offsetsPart := coordhash.PartitionFor("g", 4) // offsets.topic.num.partitions in tests
	if d.ErrorCode != 0 || d.State != "Ongoing" || d.ProducerID != pid || d.TimeoutMillis != 60_000 || len(d.Topics) != 2 {
		t.Fatalf("describe ongoing: %+v", d)
	}
	list := kmsg.NewPtrListTransactionsRequest()
	list.SetVersion(1)
	list.StateFilters = []string{"Ongoing", "Bogus"}
	list.DurationFilterMillis = -1
	lr := tb.roundTrip(list).(*kmsg.ListTransactionsResponse)
	if lr.ErrorCode != 0 || len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionalID != "tx" || !slices.Equal(lr.UnknownStateFilters, []string{"Bogus"}) {
		t.Fatalf("list: %+v", lr)
	}

	wantCode(t, "commit", endTxnRaw(tb, 3, "tx", pid, 0, true), noError)
	waitTxnState(t, tb, "tx", "CompleteCommit")
	reqs := rec.sent()
	if len(reqs) != 1 || len(reqs[0].Markers) != 1 {
		t.Fatalf("marker requests: %+v", reqs)
	}
	m := reqs[0].Markers[0]
	// WriteTxnMarkers v2; a TV1 transaction's markers say version 0.
	if reqs[0].Version != 2 || m.TransactionVersion != 0 || !m.Committed || m.ProducerID != pid || m.ProducerEpoch != 0 || m.CoordinatorEpoch < 0 {
		t.Fatalf("marker: %+v", m)
	}
	var marked []string
	for _, mt := range m.Topics {
		for _, p := range mt.Partitions {
			marked = append(marked, fmt.Sprintf("%s-%d", mt.Topic, p))
		}
	}
	want := []string{fmt.Sprintf("__consumer_offsets-%d", offsetsPart), "tt-0", "tt-1"}
	if !slices.Equal(marked, want) {
		t.Fatalf("marked %v, want %v", marked, want)
	}
	// A retried commit succeeds; an abort of a committed one does not.
	wantCode(t, "retried commit", endTxnRaw(tb, 3, "tx", pid, 0, true), noError)
	wantCode(t, "abort after commit", endTxnRaw(tb, 3, "tx", pid, 0, false), kerr.InvalidTxnState)
}

// TestTransactionFencingVersions: a second InitProducerId fences the first
// producer; versions before PRODUCER_FENCED existed get
// INVALID_PRODUCER_EPOCH.
func TestTransactionFencingVersions(t *testing.T) {
	tb, _ := startTxnBroker(t)
	tb.createTopic("tt", 1, nil)
	first := initTxn(t, tb, 4, "tx")
	second := initTxn(t, tb, 4, "tx")
	if second.ErrorCode != 0 || second.ProducerID != first.ProducerID || second.ProducerEpoch != first.ProducerEpoch+1 {
		t.Fatalf("second init: %+v after %+v", second, first)
	}
	pid := first.ProducerID
	for _, tc := range []struct {
		version int16
		want    *kerr.Error
	}{{0, kerr.InvalidProducerEpoch}, {1, kerr.InvalidProducerEpoch}, {2, kerr.ProducerFenced}, {3, kerr.ProducerFenced}} {
		got := addPartitionsRaw(t, tb, tc.version, "tx", pid, first.ProducerEpoch, "tt", 0)
		wantCode(t, fmt.Sprintf("add v%d", tc.version), got["tt"][0], tc.want)
		wantCode(t, fmt.Sprintf("end v%d", tc.version), endTxnRaw(tb, tc.version, "tx", pid, first.ProducerEpoch, true), tc.want)
		off := kmsg.NewPtrAddOffsetsToTxnRequest()
		off.SetVersion(tc.version)
		off.TransactionalID, off.ProducerID, off.ProducerEpoch, off.Group = "tx", pid, first.ProducerEpoch, "g"
		wantCode(t, fmt.Sprintf("add offsets v%d", tc.version), tb.roundTrip(off).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, tc.want)
	}
	// KIP-360 with a stale epoch: fenced, as INVALID_PRODUCER_EPOCH before v4.
	for _, tc := range []struct {
		version int16
		want    *kerr.Error
	}{{3, kerr.InvalidProducerEpoch}, {4, kerr.ProducerFenced}} {
		init := kmsg.NewPtrInitProducerIDRequest()
		init.SetVersion(tc.version)
		init.TransactionalID = kmsg.StringPtr("tx")
		init.TransactionTimeoutMillis = 60_000
		init.ProducerID, init.ProducerEpoch = pid+100, 0
		wantCode(t, fmt.Sprintf("init v%d", tc.version), tb.roundTrip(init).(*kmsg.InitProducerIDResponse).ErrorCode, tc.want)
	}
	wantCode(t, "timeout above transaction.max.timeout.ms", func() int16 {
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID = kmsg.StringPtr("tx")
		init.TransactionTimeoutMillis = 900_001
		return tb.roundTrip(init).(*kmsg.InitProducerIDResponse).ErrorCode
	}(), kerr.InvalidTransactionTimeout)
	wantCode(t, "unknown id", endTxnRaw(tb, 3, "other", pid, 0, true), kerr.InvalidProducerIDMapping)
}

// TestTransactionStateSurvivesRestart: the coordinator reloads
// __transaction_state through the replica layer.
func TestTransactionStateSurvivesRestart(t *testing.T) {
	tb, _ := startTxnBroker(t)
	tb.createTopic("tt", 1, nil)
	init := initTxn(t, tb, 4, "tx")
	addPartitionsRaw(t, tb, 3, "tx", init.ProducerID, 0, "tt", 0)
	wantCode(t, "abort", endTxnRaw(tb, 3, "tx", init.ProducerID, 0, false), noError)
	waitTxnState(t, tb, "tx", "CompleteAbort")
	tb.restart()
	d := waitTxnState(t, tb, "tx", "CompleteAbort")
	if d.ProducerID != init.ProducerID || d.ProducerEpoch != 0 {
		t.Fatalf("after restart: %+v", d)
	}
	again := initTxn(t, tb, 4, "tx")
	if again.ProducerID != init.ProducerID || again.ProducerEpoch != 1 {
		t.Fatalf("init after restart: %+v", again)
	}
}

func TestTransactionAPIVersionsAdvertised(t *testing.T) {
	tb := startBroker(t, nil)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 4, "test", "1"
	resp := tb.roundTrip(av).(*kmsg.ApiVersionsResponse)
	want := map[int16][2]int16{22: {0, 5}, 24: {0, 5}, 25: {0, 4}, 26: {0, 5}, 27: {0, 2}, 28: {0, 5}, 65: {0, 0}, 66: {0, 1}}
	for _, k := range resp.ApiKeys {
		if w, ok := want[k.ApiKey]; ok {
			if k.MinVersion != w[0] || k.MaxVersion != w[1] {
				t.Errorf("key %d: %d-%d, want %d-%d", k.ApiKey, k.MinVersion, k.MaxVersion, w[0], w[1])
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) != 0 {
		t.Fatalf("not advertised: %v", want)
	}
	// Kafka 4.x clients use transaction version 2 when the finalized
	// features of the highest epoch they have seen say so.
	supported, finalized := false, false
	for _, f := range resp.SupportedFeatures {
		if f.Name == "transaction.version" {
			supported = f.MinVersion == 0 && f.MaxVersion == 2
		}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			finalized = f.MinVersionLevel == 2 && f.MaxVersionLevel == 2
		}
	}
	if !supported || !finalized || resp.FinalizedFeaturesEpoch < 0 {
		t.Fatalf("transaction.version not advertised at 2: supported %+v finalized %+v epoch %d", resp.SupportedFeatures, resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch)
	}
	// ApiVersions v2 has no feature fields.
	old := kmsg.NewPtrApiVersionsRequest()
	old.Version = 2
	if r := tb.roundTrip(old).(*kmsg.ApiVersionsResponse); len(r.FinalizedFeatures) != 0 {
		t.Fatalf("v2 answer with features %+v", r.FinalizedFeatures)
	}
}

// TestTxnOffsetCommitThroughBroker: offsets committed in a transaction are
// pending (UNSTABLE_OFFSET_COMMIT for require_stable) until EndTxn's marker
// reaches the group's __consumer_offsets partition.
func TestTxnOffsetCommitThroughBroker(t *testing.T) {
	rec := &markerRecorder{}
	tb := startBrokerWith(t, map[string]string{"transaction.state.log.num.partitions": "3"}, func(b *Broker) {
		rec.install(b)
	})
	tb.createTopic("tt", 1, nil)
	readyCoordinator(t, tb, "g")
	init := initTxn(t, tb, 4, "tx")
	pid := init.ProducerID
	off := kmsg.NewPtrAddOffsetsToTxnRequest()
	off.SetVersion(3)
	off.TransactionalID, off.ProducerID, off.ProducerEpoch, off.Group = "tx", pid, 0, "g"
	wantCode(t, "add offsets", tb.roundTrip(off).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, noError)

	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.SetVersion(3)
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch, commit.Generation = "tx", "g", pid, 0, -1
	for _, topic := range []string{"tt", "nope"} {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 17
		rt.Partitions = append(rt.Partitions, rp)
		commit.Topics = append(commit.Topics, rt)
	}
	codes := map[string]int16{}
	for _, rt := range tb.roundTrip(commit).(*kmsg.TxnOffsetCommitResponse).Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	wantCode(t, "txn commit", codes["tt"], noError)
	wantCode(t, "txn commit of an unknown topic", codes["nope"], kerr.UnknownTopicOrPartition)

	fetch := func() (int64, int16) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(7)
		req.Group, req.RequireStable = "g", true
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "tt", []int32{0}
		req.Topics = append(req.Topics, rt)
		p := tb.roundTrip(req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	if _, code := fetch(); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("stable fetch in the transaction: %v", kerr.ErrorForCode(code))
	}
	wantCode(t, "commit", endTxnRaw(tb, 3, "tx", pid, 0, true), noError)
	waitTxnState(t, tb, "tx", "CompleteCommit")
	if o, code := fetch(); code != 0 || o != 17 {
		t.Fatalf("after the commit marker: offset %d %v", o, kerr.ErrorForCode(code))
	}
}

// TestAddPartitionsToTxnV4Batched: partition leaders verify partitions
// (verify_only) and may add several transactions in one request.
func TestAddPartitionsToTxnV4Batched(t *testing.T) {
	tb, _ := startTxnBroker(t)
	tb.createTopic("tt", 2, nil)
	a := initTxn(t, tb, 4, "ta")
	b := initTxn(t, tb, 4, "tb")
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(4)
	tr := func(id string, pid int64, verify bool, parts ...int32) kmsg.AddPartitionsToTxnRequestTransaction {
		x := kmsg.NewAddPartitionsToTxnRequestTransaction()
		x.TransactionalID, x.ProducerID, x.ProducerEpoch, x.VerifyOnly = id, pid, 0, verify
		rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rt.Topic, rt.Partitions = "tt", parts
		x.Topics = append(x.Topics, rt)
		return x
	}
	codes := func(resp *kmsg.AddPartitionsToTxnResponse) map[string][]int16 {
		out := map[string][]int16{}
		for _, x := range resp.Transactions {
			for _, rt := range x.Topics {
				for _, p := range rt.Partitions {
					out[x.TransactionalID] = append(out[x.TransactionalID], p.ErrorCode)
				}
			}
		}
		return out
	}
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tr("ta", a.ProducerID, false, 0), tr("tb", b.ProducerID, true, 0)}
	got := codes(tb.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse))
	if !slices.Equal(got["ta"], []int16{0}) || !slices.Equal(got["tb"], []int16{kerr.InvalidTxnState.Code}) {
		t.Fatalf("add + verify: %v", got)
	}
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tr("ta", a.ProducerID, true, 0, 1), tr("tb", a.ProducerID, true, 0)}
	got = codes(tb.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse))
	if !slices.Equal(got["ta"], []int16{0, kerr.InvalidTxnState.Code}) || !slices.Equal(got["tb"], []int16{kerr.InvalidProducerIDMapping.Code}) {
		t.Fatalf("verify: %v", got)
	}
	if d := describeTxn(tb, "tb"); d.State != "Empty" {
		t.Fatalf("verify changed tb: %+v", d)
	}
}

// TestTransactionsWithFranzGo: a stock client finds the coordinator, gets a
// transactional producer id, and kadm lists and describes it.
func TestTransactionsWithFranzGo(t *testing.T) {
	tb, _ := startTxnBroker(t)
	ctx := testContext(t)
	cl := tb.client(kgo.TransactionalID("franz"), kgo.TransactionTimeout(30*time.Second))
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil || pid < 0 || epoch != 0 {
		t.Fatalf("producer id %d epoch %d: %v", pid, epoch, err)
	}
	adm := tb.admin()
	listed, err := adm.ListTransactions(ctx, nil, []string{"Empty"})
	if err != nil || listed["franz"].ProducerID != pid || listed["franz"].State != "Empty" {
		t.Fatalf("list: %+v %v", listed, err)
	}
	described, err := adm.DescribeTransactions(ctx, "franz")
	if err != nil {
		t.Fatal(err)
	}
	d := described["franz"]
	if d.Err != nil || d.State != "Empty" || d.ProducerID != pid || d.ProducerEpoch != 0 || d.TimeoutMillis != 30_000 || d.Coordinator != 0 {
		t.Fatalf("describe: %+v", d)
	}
}

// TestTransactionStateTopicSettings: the first transaction lookup creates
// __transaction_state with Kafka's settings for it.
func TestTransactionStateTopicSettings(t *testing.T) {
	tb, _ := startTxnBroker(t)
	initTxn(t, tb, 4, "tx")
	ctx := testContext(t)
	adm := tb.admin()
	topics, err := adm.ListTopicsWithInternal(ctx, transactionStateTopic)
	if err != nil {
		t.Fatal(err)
	}
	td := topics[transactionStateTopic]
	if td.Err != nil || !td.IsInternal || len(td.Partitions) != 3 || td.Partitions.NumReplicas() != 1 {
		t.Fatalf("topic: %+v", td)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, transactionStateTopic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cleanup.policy": "compact", "compression.type": "uncompressed", "min.insync.replicas": "1",
		"segment.bytes": "104857600", "unclean.leader.election.enable": "false",
	}
	got := map[string]string{}
	for _, c := range cfgs[0].Configs {
		if c.Value != nil {
			got[c.Key] = *c.Value
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestTimedOutTransactionAbortedByBroker: the coordinator's timer aborts a
// transaction past its timeout, bumping the epoch, which fences its
// producer.
func TestTimedOutTransactionAbortedByBroker(t *testing.T) {
	rec := &markerRecorder{}
	tb := startBrokerWith(t, map[string]string{
		"transaction.state.log.num.partitions":                        "3",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "50",
	}, rec.install)
	tb.createTopic("tt", 1, nil)
	readyInit := initTxn(t, tb, 4, "tx")
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(4)
	init.TransactionalID = kmsg.StringPtr("tx")
	init.TransactionTimeoutMillis = 200
	r := tb.roundTrip(init).(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != 0 || r.ProducerEpoch != readyInit.ProducerEpoch+1 {
		t.Fatalf("init with a short timeout: %+v", r)
	}
	addPartitionsRaw(t, tb, 3, "tx", r.ProducerID, r.ProducerEpoch, "tt", 0)
	d := waitTxnState(t, tb, "tx", "CompleteAbort")
	if d.ProducerEpoch != r.ProducerEpoch+1 {
		t.Fatalf("aborted at epoch %d, want the fencing bump to %d", d.ProducerEpoch, r.ProducerEpoch+1)
	}
	reqs := rec.sent()
	if len(reqs) != 1 || reqs[0].Markers[0].Committed || reqs[0].Markers[0].ProducerEpoch != r.ProducerEpoch+1 {
		t.Fatalf("markers %+v", reqs)
	}
	wantCode(t, "commit of the fenced producer", endTxnRaw(tb, 3, "tx", r.ProducerID, r.ProducerEpoch, true), kerr.ProducerFenced)
}
