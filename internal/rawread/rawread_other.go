//go:build !linux

package rawread

import "net"

// wrap returns c as dialed: raw reads are for Linux only.
func wrap(c net.Conn) net.Conn { return c }
