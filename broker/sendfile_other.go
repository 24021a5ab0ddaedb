//go:build !linux

package broker

import (
	"net"

	"github.com/brook-mq/brook/log"
)

// sendRegion copies the region through memory where sendfile(2) with an
// explicit offset is not available.
func sendRegion(nc net.Conn, s log.Slice) error { return copyRegion(nc, s) }

// cork is a no-op where TCP_CORK does not exist.
func cork(net.Conn, bool) {}
