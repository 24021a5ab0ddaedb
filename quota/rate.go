package quota

import "time"

// Window is how a Rate measures: Num samples (quota.window.num) of Size
// each (quota.window.size.seconds).
type Window struct {
	Num  int
	Size time.Duration
}

// DefaultWindow is Kafka's: 11 samples of 1 s.
var DefaultWindow = Window{Num: 11, Size: time.Second}

func (w Window) normal() Window {
	if w.Num < 1 {
		w.Num = DefaultWindow.Num
	}
	if w.Size < time.Millisecond {
		w.Size = DefaultWindow.Size
	}
	return w
}

// Rate is Kafka's Rate over a SampledStat of sums, in milliseconds as
// Kafka counts: the sum of the live samples divided by the time since
// the oldest began, that time counted as at least Num-1 whole windows so
// that a first burst is measured against almost the full window rather
// than the few milliseconds it took.
type Rate struct {
	w       Window
	samples []sample
	current int
}

type sample struct {
	start int64 // ms
	value float64
}

// NewRate returns an empty rate measured over w.
func NewRate(w Window) *Rate { return &Rate{w: w.normal()} }

func (r *Rate) sizeMs() int64 { return r.w.Size.Milliseconds() }

// Record adds v at nowMs. As Kafka's SampledStat, a sample whose window
// has passed is replaced by the next, whose start is aligned to the
// previous sample's windows so that idle gaps do not shift them.
func (r *Rate) Record(v float64, nowMs int64) {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: nowMs})
	}
	s := &r.samples[r.current]
	if size := r.sizeMs(); nowMs-s.start >= size {
		end := s.start + size
		r.advance(nowMs - (nowMs-end)%size)
		s = &r.samples[r.current]
	}
	s.value += v
}

func (r *Rate) advance(startMs int64) {
	r.current = (r.current + 1) % r.w.Num
	if r.current >= len(r.samples) {
		r.samples = append(r.samples, sample{start: startMs})
		return
	}
	r.samples[r.current] = sample{start: startMs}
}

// purge resets the samples that began Num windows or more ago, as
// Kafka's purgeObsoleteSamples.
func (r *Rate) purge(nowMs int64) {
	expire := int64(r.w.Num) * r.sizeMs()
	for i := range r.samples {
		if nowMs-r.samples[i].start >= expire {
			r.samples[i] = sample{start: nowMs}
		}
	}
}

// WindowMs is Kafka's Rate.windowSize: the time since the oldest live
// sample began, at least Num-1 whole windows.
func (r *Rate) WindowMs(nowMs int64) int64 {
	r.purge(nowMs)
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: nowMs})
	}
	oldest := r.samples[0].start
	for _, s := range r.samples[1:] {
		oldest = min(oldest, s.start)
	}
	elapsed := nowMs - oldest
	size := r.sizeMs()
	if full, minFull := elapsed/size, int64(r.w.Num-1); full < minFull {
		elapsed += (minFull - full) * size
	}
	return elapsed
}

// Measure is the rate per second at nowMs.
func (r *Rate) Measure(nowMs int64) float64 {
	window := r.WindowMs(nowMs)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	if window <= 0 {
		return 0
	}
	return sum / (float64(window) / 1000)
}

// ThrottleTime is Kafka's QuotaUtils.throttleTime: how long a client
// measured at observed against quota must stay quiet for its rate over
// windowMs to fall back to the quota, (observed-quota)/quota*window,
// rounded; zero or less when within the quota.
func ThrottleTime(observed, quota float64, windowMs int64) time.Duration {
	if quota <= 0 || observed <= quota {
		return 0
	}
	ms := (observed - quota) / quota * float64(windowMs)
	return time.Duration(int64(ms+0.5)) * time.Millisecond
}
