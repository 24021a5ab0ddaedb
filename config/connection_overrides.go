package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseConnectionOverrides reads max.connections.per.ip.overrides: a comma
// separated list of host:count, as Kafka's "hostName:100,127.0.0.1:200".
// The count follows the last ':' so that IPv6 addresses work.
func ParseConnectionOverrides(v string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, e := range listElems(v) {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i := strings.LastIndex(e, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q is not host:count", e)
		}
		host := strings.TrimSpace(e[:i])
		n, err := strconv.ParseInt(strings.TrimSpace(e[i+1:]), 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the count must be a non-negative int", e)
		}
		out[host] = int32(n)
	}
	return out, nil
}

func connectionOverrides() validator {
	return validator{
		check: func(v string) error { _, err := ParseConnectionOverrides(v); return err },
		desc:  "host:count,host:count,...",
	}
}
