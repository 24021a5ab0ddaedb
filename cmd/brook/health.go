package main

import (
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol"
)

// healthTimeout bounds one health check: a broker that cannot answer
// ApiVersions within it is unhealthy.
const healthTimeout = 5 * time.Second

// healthcheck asks the broker at addr for its API versions, as a
// container HEALTHCHECK does: the image has no shell or client tools, so
// the brook binary checks itself.
func healthcheck(addr string) error {
	c, err := net.DialTimeout("tcp", addr, healthTimeout)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(healthTimeout))
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("brook-healthcheck")).AppendRequest(nil, req, 1)); err != nil {
		return fmt.Errorf("healthcheck: send ApiVersions: %w", err)
	}
	frame, err := protocol.ReadResponseFrame(c, nil, 1<<20)
	if err != nil {
		return fmt.Errorf("healthcheck: read ApiVersions: %w", err)
	}
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if len(frame) < 4 {
		return fmt.Errorf("healthcheck: short ApiVersions response")
	}
	if err := resp.ReadFrom(frame[4:]); err != nil {
		return fmt.Errorf("healthcheck: decode ApiVersions: %w", err)
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("healthcheck: ApiVersions error code %d", resp.ErrorCode)
	}
	return nil
}
