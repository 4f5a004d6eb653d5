//go:build !linux

package rawread

import "net"

// wrap returns c as dialed: raw reads are for Linux only.
func wrap(c net.Conn) net.Conn { return c }

// find returns nil: receive times are for Linux only.
func find(net.Conn) stamped { return nil }
