package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestControlledShutdown stops a leader with SIGTERM. Before it leaves,
// the controller must move its leaderships to other ISR members and take it
// out of every ISR (controlled shutdown): ZooKeeper shows the partition
// states written before the broker's registration went. When the leader is
// not the controller, the other brokers' Metadata shows the new leaders as
// soon as the process has exited; a controller that shuts itself down may
// leave that to its successor (as Kafka's does: its queued requests die with
// it), so there Metadata only has to converge.
func TestControlledShutdown(t *testing.T) {
	tests := []struct {
		name          string
		pick          func(t *testing.T, v clusterView, topic string) int32
		metadataFirst bool
	}{
		{"leader", leaderVictim, true},
		{"controller", func(t *testing.T, v clusterView, topic string) int32 {
			if len(v.ledBy(topic, v.Controller)) == 0 {
				t.Fatalf("controller %d leads no partition of %s: %s", v.Controller, topic, v)
			}
			return v.Controller
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testControlledShutdown(t, tt.pick, tt.metadataFirst)
		})
	}
}

func testControlledShutdown(t *testing.T, pick func(*testing.T, clusterView, string) int32, metadataFirst bool) {
	c := startCluster(t, 3, nil)
	const topic, partitions = "controlled", 6
	c.createTopic(topic, partitions, nil)
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))
	victim := pick(t, before, topic)
	led := before.ledBy(topic, victim)

	if err := c.broker(victim).Stop(); err != nil {
		t.Fatalf("SIGTERM broker %d: %v\n%s", victim, err, c.broker(victim).LogTail(30))
	}
	live := c.others(victim)
	if metadataFirst {
		for _, id := range live {
			resp, err := c.metadata(id)
			if err != nil {
				t.Fatal(err)
			}
			v := viewOf(resp)
			for _, p := range v.topicPartitions(topic) {
				pv := v.Partitions[p]
				if pv.Leader == victim || slices.Contains(pv.ISR, victim) {
					t.Errorf("broker %d, right after broker %d exited: %s leader=%d isr=%v; want leadership and ISR moved away first",
						id, victim, p, pv.Leader, pv.ISR)
				}
			}
		}
	}

	// A clean exit closes the session, so the registration goes at once;
	// /brokers/ids' pzxid is then the zxid of that deregistration.
	var deregistered int64
	testutil.Eventually(t, convergeTimeout, func() error {
		ids, stat, err := c.zkv.brokerIDs()
		if err != nil {
			return err
		}
		if slices.Contains(ids, victim) {
			return fmt.Errorf("broker %d still registered after its exit", victim)
		}
		deregistered = stat.Pzxid
		return nil
	})
	for _, p := range led {
		st, err := c.zkv.partitionState(topic, p.partition)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader == victim || !slices.Contains(before.Partitions[p].ISR, st.Leader) {
			t.Errorf("%s: leader %d in ZooKeeper, want one of the old ISR %v other than %d", p, st.Leader, before.Partitions[p].ISR, victim)
		}
		if st.mzxid > deregistered {
			t.Errorf("%s: state written at zxid %#x, after broker %d deregistered (%#x): leadership moved by failover, not by controlled shutdown",
				p, st.mzxid, victim, deregistered)
		}
	}
	if !strings.Contains(c.broker(victim).LogTail(20), "controlled shutdown complete") {
		t.Errorf("broker %d did not report a complete controlled shutdown:\n%s", victim, c.broker(victim).LogTail(20))
	}
	c.converge(live, func(v clusterView) error { return checkFailedOver(v, before, topic, victim, live) })

	c.restart(victim)
	c.converge(c.ids, func(v clusterView) error { return v.checkTopicHealthy(topic, partitions, 3, c.ids, false) })
}

// TestBrokerIDClash starts a fourth broker with the id of a running one:
// after waiting in case the owner's session is about to expire (see
// TestBrokerKill9RestartAtOnce), it must exit non-zero with an error that
// names the clash, and the running broker must keep its registration.
func TestBrokerIDClash(t *testing.T) {
	c := startCluster(t, 3, nil)
	const dup = int32(2)
	orig, ok, err := c.zkv.registration(dup)
	if err != nil || !ok {
		t.Fatalf("registration of broker %d: %v, %v", dup, ok, err)
	}

	dir := t.TempDir()
	props := c.brokerConfig(dup, map[string]string{
		"listeners": fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", testutil.FreePort(t)),
		"log.dirs":  filepath.Join(dir, "data"),
	})
	var lines []string
	for k, v := range props {
		lines = append(lines, k+"="+v)
	}
	propPath := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(propPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, brookBin, "--config", propPath).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("second broker %d still running after %v; want it to refuse to start\n%s", dup, time.Minute, out)
	}
	if err == nil {
		t.Fatalf("second broker %d exited with status 0; want a failure\n%s", dup, out)
	}
	if !strings.Contains(string(out), "broker id already registered") || !strings.Contains(string(out), "register broker 2") {
		t.Errorf("second broker %d's error does not name the clash:\n%s", dup, out)
	}
	// It gave the owner's session time to expire, as after kill -9, first.
	if !strings.Contains(string(out), "waiting for it to expire") || !strings.Contains(string(out), "still after waiting") {
		t.Errorf("second broker %d did not wait for the owner's session before failing:\n%s", dup, out)
	}
	t.Logf("second broker %d: %v\n%s", dup, err, out)

	now, ok, err := c.zkv.registration(dup)
	if err != nil || !ok {
		t.Fatalf("registration of broker %d after the clash: %v, %v", dup, ok, err)
	}
	if now != orig {
		t.Errorf("registration of broker %d changed: %+v, was %+v", dup, now, orig)
	}
	if now.Port != int32(c.broker(dup).Port()) {
		t.Errorf("broker %d registered on port %d, want the running broker's %d", dup, now.Port, c.broker(dup).Port())
	}
	c.converge(c.ids, nil)
}

// TestBrokerKill9RestartAtOnce kills a broker with SIGKILL and starts it
// again at once, before ZooKeeper expires its session: its registration is
// still there, owned by the dead session. Kafka's broker exits then (and a
// supervisor crash-loops it); Brook's waits for the session to expire,
// saying so, and rejoins.
func TestBrokerKill9RestartAtOnce(t *testing.T) {
	c := startCluster(t, 3, nil)
	const topic, partitions = "restart-at-once", 3
	c.createTopic(topic, partitions, nil)
	c.converge(c.ids, healthy(topic, partitions, c.ids))
	victim := c.others(c.controller())[0]
	old, ok, err := c.zkv.registration(victim)
	if err != nil || !ok {
		t.Fatalf("registration of broker %d: %v, %v", victim, ok, err)
	}

	c.kill9(victim)
	c.broker(victim).Restart() // fails the test if the broker exits
	log := c.broker(victim).LogTail(200)
	if !strings.Contains(log, "waiting for it to expire") || !strings.Contains(log, fmt.Sprintf("owner_session=0x%x", old.owner)) {
		t.Errorf("broker %d does not say that it waited for session 0x%x:\n%s", victim, old.owner, log)
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "waiting for it to expire") || strings.Contains(line, "previous registration expired") {
			t.Logf("broker %d: %s", victim, line)
		}
	}
	now, ok, err := c.zkv.registration(victim)
	if err != nil || !ok {
		t.Fatalf("registration of broker %d after the restart: %v, %v", victim, ok, err)
	}
	if now.owner == old.owner {
		t.Errorf("broker %d still registered by the killed run's session 0x%x", victim, old.owner)
	}
	c.converge(c.ids, func(v clusterView) error { return v.checkTopicHealthy(topic, partitions, 3, c.ids, false) })
}
