// Package quota is Kafka's client quotas (ClientQuotaManager): which
// quota applies to a (user, client-id) with Kafka's precedence, the rate
// each quota entity is measured at over quota.window.num samples of
// quota.window.size.seconds, and the throttle time a client over its
// quota is told (KIP-219). It holds no I/O: the broker feeds it the
// quotas stored under /config/users and /config/clients and a clock.
package quota
