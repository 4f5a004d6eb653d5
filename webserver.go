package main

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// webLimits bound what clients of the web server can hold. The defaults
// suit a Prometheus scrape target: a scrape (Prometheus' scrape_timeout is
// at most its interval, usually 10s–1m) fits well within the write
// timeout however large /metrics is, and a connection Prometheus keeps
// alive between scrapes one interval apart (up to 1m) is not closed under
// it.
type webLimits struct {
	// readHeaderTimeout bounds reading a request's headers, also on a new
	// connection that sends nothing.
	readHeaderTimeout time.Duration
	// readTimeout bounds reading a whole request (the endpoints take no
	// body).
	readTimeout time.Duration
	// writeTimeout bounds writing a response from the end of its request;
	// /probe extends it by the probe's timeout, which its request may take.
	writeTimeout time.Duration
	// idleTimeout closes a keep-alive connection idle for that long.
	idleTimeout time.Duration
	// maxConnections caps the connections accepted at once per listen
	// address; further ones wait in the kernel's accept queue and take no
	// file descriptor of the process until one closes.
	maxConnections int
}

// defaultWebLimits are the limits of `run` and `demo` (README, Security).
var defaultWebLimits = webLimits{
	readHeaderTimeout: 10 * time.Second,
	readTimeout:       30 * time.Second,
	writeTimeout:      2 * time.Minute,
	idleTimeout:       2 * time.Minute,
	maxConnections:    256,
}

// newWebServer returns the daemon's HTTP server with limits applied.
//
// The web server and the probes never share connections: the server has
// its own listeners, bounded by maxConnections and the timeouts above,
// while every (target, probe) pair sends through its own HTTP client and
// transport (client.New), each bounded by the probe's
// max_in_flight, and server scrapes use one client per target. So idle or
// slow web clients cannot take more than maxConnections descriptors per
// address from the probes, and a probe flood cannot take the web server's
// accepted connections.
func newWebServer(h http.Handler, l webLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.readHeaderTimeout,
		ReadTimeout:       l.readTimeout,
		WriteTimeout:      l.writeTimeout,
		IdleTimeout:       l.idleTimeout,
	}
}

// limitListeners caps each listener at l.maxConnections open connections.
func limitListeners(lns []net.Listener, l webLimits) ([]net.Listener, error) {
	if l.maxConnections < 1 {
		for _, ln := range lns {
			ln.Close()
		}
		return nil, fmt.Errorf("--web.max-connections must be at least 1, got %d", l.maxConnections)
	}
	out := make([]net.Listener, len(lns))
	for i, ln := range lns {
		out[i] = netutil.LimitListener(ln, l.maxConnections)
	}
	return out, nil
}
