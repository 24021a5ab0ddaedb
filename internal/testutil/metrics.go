package testutil

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is one parsed scrape of a Prometheus endpoint.
type Scrape map[string]*dto.MetricFamily

// ScrapeMetrics GETs http://addr/metrics and parses the text format.
func ScrapeMetrics(addr string) (Scrape, error) {
	cl := http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse scrape of %s: %w", addr, err)
	}
	return Scrape(fams), nil
}

// MustScrape is ScrapeMetrics failing the test on error.
func MustScrape(t testing.TB, addr string) Scrape {
	t.Helper()
	s, err := ScrapeMetrics(addr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Value returns the value of the series of family name whose labels are
// exactly labels (name=value pairs); ok is false when there is none.
func (s Scrape) Value(name string, labels ...string) (v float64, ok bool) {
	fam := s[name]
	if fam == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range fam.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		match := true
		for _, l := range m.Label {
			if want[l.GetName()] != l.GetValue() {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// Count is the number of series of family name.
func (s Scrape) Count(name string) int {
	if fam := s[name]; fam != nil {
		return len(fam.Metric)
	}
	return 0
}
