package quota

// TokenBucket is Kafka's TokenBucket stat, the measure of
// controller_mutation_rate (KIP-599): the quota is the refill rate per
// second and Num windows of it the burst. Unlike a Rate, a burst above
// the quota is paid back as soon as the refill covers it, not only when
// its sample expires. A fresh bucket is full: Kafka's starts at zero
// tokens updated at time zero, so its first refill fills it.
type TokenBucket struct {
	tokens float64
	lastMs int64
}

// burst is Kafka's: samples x window (s) x quota.
func burst(w Window, quota float64) float64 {
	return float64(w.Num) * w.Size.Seconds() * quota
}

func (b *TokenBucket) refill(quota, burst float64, nowMs int64) {
	b.tokens = min(burst, b.tokens+quota*float64(nowMs-b.lastMs)/1000)
	b.lastMs = nowMs
}

// Measure is the tokens left at nowMs; below zero the quota is exceeded.
func (b *TokenBucket) Measure(w Window, quota float64, nowMs int64) float64 {
	b.refill(quota, burst(w, quota), nowMs)
	return b.tokens
}

// Record takes v tokens at nowMs; the bucket may go below zero.
func (b *TokenBucket) Record(w Window, quota, v float64, nowMs int64) {
	bu := burst(w, quota)
	b.refill(quota, bu, nowMs)
	b.tokens = min(bu, b.tokens-v)
}

// bucketThrottle is Kafka's ControllerMutationQuotaManager.throttleTimeMs:
// the time for the refill to bring tokens (below zero) back to zero,
// rounded to the millisecond.
func bucketThrottle(tokens, quota float64) int64 {
	if tokens >= 0 || quota <= 0 {
		return 0
	}
	return int64(-tokens/quota*1000 + 0.5)
}
