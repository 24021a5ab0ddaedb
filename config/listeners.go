package config

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Listener is one NAME://host:port entry of listeners or
// advertised.listeners. Name is upper-cased as Kafka normalises it; an
// empty Host means every interface (for listeners).
type Listener struct {
	Name string
	Host string
	Port int
}

// Addr is the host:port to listen on or to dial.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// Kafka's endpoint syntax: host may be empty or a bracketed IPv6 address.
var endpointRE = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// parseListeners parses a comma-separated endpoint list and checks each
// name against the protocol map.
func parseListeners(key, value string, protocols map[string]string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, e := range listElems(value) {
		if e == "" {
			continue
		}
		m := endpointRE.FindStringSubmatch(e)
		if m == nil {
			return nil, &ValueError{Name: key, Value: value, Reason: fmt.Sprintf("unable to parse %s to a broker endpoint", e)}
		}
		port, err := strconv.Atoi(m[3])
		if err != nil || port < 0 || port > 65535 {
			return nil, &ValueError{Name: key, Value: value, Reason: fmt.Sprintf("port out of range in %s", e)}
		}
		name := strings.ToUpper(m[1])
		if _, ok := protocols[name]; !ok {
			return nil, &ValueError{Name: key, Value: value, Reason: fmt.Sprintf("no security protocol defined for listener %s in listener.security.protocol.map", name)}
		}
		if seen[name] {
			return nil, &ValueError{Name: key, Value: value, Reason: fmt.Sprintf("each listener must have a different name; %s is repeated", name)}
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: m[2], Port: port})
	}
	return out, nil
}

// parseProtocolMap parses NAME:PROTOCOL pairs.
func parseProtocolMap(value string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range listElems(value) {
		if e == "" {
			continue
		}
		name, proto, ok := strings.Cut(e, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, &ValueError{Name: "listener.security.protocol.map", Value: value, Reason: fmt.Sprintf("%q is not NAME:PROTOCOL", e)}
		}
		switch proto {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return nil, &ValueError{Name: "listener.security.protocol.map", Value: value, Reason: fmt.Sprintf("unknown security protocol %s", proto)}
		}
		out[name] = proto
	}
	return out, nil
}

// canonicalHostname mirrors Java's InetAddress.getLocalHost()
// .getCanonicalHostName(): the host name, resolved and reverse-resolved
// to a fully qualified name when the resolver knows one.
func canonicalHostname() (string, error) {
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("host name: %w", err)
	}
	addrs, err := net.LookupHost(h)
	if err != nil || len(addrs) == 0 {
		return h, nil
	}
	names, err := net.LookupAddr(addrs[0])
	if err != nil || len(names) == 0 {
		return h, nil
	}
	return strings.TrimSuffix(names[0], "."), nil
}

// checkNetwork parses listeners and advertised listeners and checks them
// as Kafka does; an empty advertised host becomes the canonical host name.
func (b *Broker) checkNetwork(hostname func() (string, error)) error {
	protocols, err := parseProtocolMap(b.str("listener.security.protocol.map"))
	if err != nil {
		return err
	}
	b.ListenerSecurityProtocolMap = protocols
	if b.Listeners, err = parseListeners("listeners", b.str("listeners"), protocols); err != nil {
		return err
	}
	if len(b.Listeners) == 0 {
		return &ValueError{Name: "listeners", Value: b.str("listeners"), Reason: "at least one listener is needed"}
	}
	adv := b.Listeners
	if b.IsSet("advertised.listeners") {
		if adv, err = parseListeners("advertised.listeners", b.str("advertised.listeners"), protocols); err != nil {
			return err
		}
		names := map[string]bool{}
		for _, l := range b.Listeners {
			names[l.Name] = true
		}
		for _, l := range adv {
			if !names[l.Name] {
				return &ValueError{Name: "advertised.listeners", Value: b.str("advertised.listeners"),
					Reason: fmt.Sprintf("listener %s is not defined in listeners; advertised listener names must be equal to or a subset of those in listeners", l.Name)}
			}
		}
	}
	b.AdvertisedListeners = make([]Listener, len(adv))
	for i, l := range adv {
		if l.Host == "0.0.0.0" {
			return &ValueError{Name: "advertised.listeners", Value: b.str("advertised.listeners"), Reason: "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0; use a routable IP address"}
		}
		if l.Host == "" {
			h, err := hostname()
			if err != nil {
				return fmt.Errorf("advertise listener %s: %w", l.Name, err)
			}
			l.Host = h
		}
		b.AdvertisedListeners[i] = l
	}
	if b.IsSet("inter.broker.listener.name") && b.IsSet("security.inter.broker.protocol") {
		return &ValueError{Name: "inter.broker.listener.name", Value: b.str("inter.broker.listener.name"), Reason: "only one of inter.broker.listener.name and security.inter.broker.protocol should be set"}
	}
	name := strings.ToUpper(b.str("security.inter.broker.protocol"))
	key := "security.inter.broker.protocol"
	if b.IsSet("inter.broker.listener.name") {
		name, key = strings.ToUpper(b.str("inter.broker.listener.name")), "inter.broker.listener.name"
	}
	for _, l := range b.AdvertisedListeners {
		if l.Name == name {
			b.InterBrokerListenerName = name
			b.fillTLS()
			return nil
		}
	}
	return &ValueError{Name: key, Value: b.str(key), Reason: fmt.Sprintf("the inter-broker listener %s must be one of the advertised listeners", name)}
}
