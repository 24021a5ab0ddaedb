package metrics

import (
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds one broker's metrics: the counters the request path
// updates, the collectors that read the broker's state at scrape time, and
// the Go runtime and process collectors. Each broker has its own, so that
// tests can run several brokers in one process.
type Registry struct {
	Requests *Requests
	Topics   *Topics

	reg   *prometheus.Registry
	mu    sync.Mutex // one scrape at a time: the state collector reuses buffers
	state stateCollector
}

// New returns a registry reading src at scrape time; now is the clock of
// the latency windows.
func New(src Source, now func() time.Time) *Registry {
	r := &Registry{Requests: newRequests(now), Topics: newTopics(), reg: prometheus.NewRegistry()}
	r.state.src = src
	r.reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsGC, collectors.MetricsMemory, collectors.MetricsScheduler)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		brokerCollector{r},
	)
	return r
}

// brokerCollector is unchecked (it describes nothing): a BrokerTopicMetrics
// family holds the aggregate without a topic label and the per-topic series
// with one, as the JMX exporter writes them, which a checked collector may
// not do.
type brokerCollector struct{ r *Registry }

func (brokerCollector) Describe(chan<- *prometheus.Desc) {}

func (c brokerCollector) Collect(ch chan<- prometheus.Metric) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.Requests.collect(ch)
	c.r.Topics.collect(ch)
	if c.r.state.src != nil {
		c.r.state.collect(ch)
	}
}

// Gatherer is the registry for tests and for serving.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Handler serves /metrics and, with withPprof, Go's profiles under
// /debug/pprof/ on the same mux.
func (r *Registry) Handler(withPprof bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		// A scrape that cannot be served whole fails rather than hiding
		// series; two scrapes at once are plenty.
		ErrorHandling:       promhttp.HTTPErrorOnError,
		MaxRequestsInFlight: 2,
	}))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
