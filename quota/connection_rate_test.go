package quota

import (
	"testing"
	"time"
)

func TestConnectionRates(t *testing.T) {
	const ms = 1_000_000
	// 2/s broker-wide over Kafka's window: 20 connections at once are
	// 2/s over the 10-window minimum; the 21st is 2.1/s, 500 ms over.
	c := NewConnectionRates(DefaultWindow, 0)
	for i := range 20 {
		if d := c.Accept("PLAINTEXT", false, 2, UnlimitedConnectionRate, ms); d != 0 {
			t.Fatalf("connection %d throttled %v", i, d)
		}
	}
	if d := c.Accept("PLAINTEXT", false, 2, UnlimitedConnectionRate, ms); d != 500*time.Millisecond {
		t.Errorf("21st connection throttled %v, want 500ms", d)
	}
	// The protected listener does not count against the broker rate.
	if d := c.Accept("INTERNAL", true, 2, UnlimitedConnectionRate, ms); d != 0 {
		t.Errorf("protected listener throttled %v by the broker rate", d)
	}
	// The throttle is at most one window.
	for range 30 {
		c.Accept("PLAINTEXT", false, 2, UnlimitedConnectionRate, ms)
	}
	if d := c.Accept("PLAINTEXT", false, 2, UnlimitedConnectionRate, ms); d != time.Second {
		t.Errorf("throttle %v, want the 1 s bound", d)
	}

	// A listener's own rate: 1/s.
	c = NewConnectionRates(DefaultWindow, 0)
	for range 10 {
		c.Accept("EXTERNAL", false, UnlimitedConnectionRate, 1, ms)
	}
	if d := c.Accept("EXTERNAL", false, UnlimitedConnectionRate, 1, ms); d != time.Second {
		t.Errorf("listener rate: throttle %v, want 1s", d)
	}
	if d := c.Accept("PLAINTEXT", false, UnlimitedConnectionRate, 1, ms); d != 0 {
		t.Errorf("another listener throttled %v", d)
	}
}

func TestConnectionRatesPerIP(t *testing.T) {
	const ms = 1_000_000
	c := NewConnectionRates(DefaultWindow, 0)
	for i := range 10 {
		if d := c.AcceptIP("PLAINTEXT", false, "10.0.0.1", 1, ms); d != 0 {
			t.Fatalf("connection %d throttled %v", i, d)
		}
	}
	// The 11th is refused, and taken back out: refused connections do
	// not keep the address over its rate.
	for range 5 {
		if d := c.AcceptIP("PLAINTEXT", false, "10.0.0.1", 1, ms); d != time.Second {
			t.Errorf("11th connection: throttle %v, want 1s", d)
		}
	}
	if d := c.AcceptIP("PLAINTEXT", false, "10.0.0.2", 1, ms); d != 0 {
		t.Errorf("another address throttled %v", d)
	}
	// A second later the young rate is still counted over 10 windows: an
	// 11th is 1.1/s, refused. Once the samples expire there is room again.
	if d := c.AcceptIP("PLAINTEXT", false, "10.0.0.1", 1, ms+1000); d == 0 {
		t.Error("accepted while still over the rate")
	}
	if d := c.AcceptIP("PLAINTEXT", false, "10.0.0.1", 1, ms+11000); d != 0 {
		t.Errorf("throttled %v once the samples expired", d)
	}
	// At 2/s, 20 connections and 5 refusals: 10.5 s on, 21 connections
	// over 10.5 s are within the rate, which 26 would not be had the
	// refusals counted.
	for i := range 25 {
		d := c.AcceptIP("PLAINTEXT", false, "10.0.0.4", 2, ms)
		if (d == 0) != (i < 20) {
			t.Fatalf("connection %d at 2/s: throttle %v", i, d)
		}
	}
	if d := c.AcceptIP("PLAINTEXT", false, "10.0.0.4", 2, ms+10500); d != 0 {
		t.Errorf("refused connections counted: throttled %v 10.5 s on", d)
	}
	// Unlimited addresses are not measured.
	before := c.IPs()
	c.AcceptIP("PLAINTEXT", false, "10.0.0.3", UnlimitedConnectionRate, ms)
	if c.IPs() != before {
		t.Error("an unlimited address was measured")
	}
	// Refusals take the connection out of the broker's rate too: ten
	// refused connections leave room for the broker's next ones.
	c = NewConnectionRates(DefaultWindow, 0)
	for range 10 {
		c.Accept("PLAINTEXT", false, 1, UnlimitedConnectionRate, ms)
		c.AcceptIP("PLAINTEXT", false, "10.0.0.1", 0.5, ms)
	}
	// 5 accepted, 5 refused and taken back: the broker rate is 0.5/s.
	for range 5 {
		if d := c.Accept("PLAINTEXT", false, 1, UnlimitedConnectionRate, ms); d != 0 {
			t.Fatalf("broker rate counted refused connections: throttle %v", d)
		}
	}
}

func TestConnectionRatesBoundIPs(t *testing.T) {
	c := NewConnectionRates(DefaultWindow, 2)
	for i, ip := range []string{"a", "b", "c"} {
		c.AcceptIP("L", false, ip, 5, int64(i))
	}
	if n := c.IPs(); n != 2 {
		t.Errorf("%d addresses measured, want the bound 2", n)
	}
	c.AcceptIP("L", false, "d", 5, InactiveExpiry.Milliseconds()+10)
	if n := c.IPs(); n != 1 {
		t.Errorf("%d addresses after an idle hour, want 1", n)
	}
}

func TestIPLimit(t *testing.T) {
	tab := Table{
		Entity{IP: Named("10.0.0.1")}: {ConnectionCreationRate: 3},
		Entity{IP: DefaultName}:       {ConnectionCreationRate: 7},
		Entity{User: Named("u")}:      {ProducerByteRate: 1},
	}
	if got := tab.IPLimit("10.0.0.1"); got != 3 {
		t.Errorf("own limit %v", got)
	}
	if got := tab.IPLimit("10.0.0.2"); got != 7 {
		t.Errorf("default limit %v", got)
	}
	if got := (Table{}).IPLimit("10.0.0.2"); got != UnlimitedConnectionRate {
		t.Errorf("no quota: %v", got)
	}
}
