// Package dnstest serves DNS records on 127.0.0.1 for tests of DNS
// discovery: the discovery package's own tests and the end-to-end tests,
// which point the daemon at it with --discovery.dns-server.
package dnstest

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Zone is what the server answers: records by name (fully qualified,
// lower case), SERVFAIL for the names Fail was given, no answer at all
// for the names Silence was given, NXDOMAIN for any other name.
type Zone struct {
	mu       sync.Mutex
	records  map[string][]dns.RR
	servfail map[string]bool
	silent   map[string]bool
}

// Set replaces the records of name, given in zone file syntax
// ("vllm.test. 5 IN A 10.0.0.1"); no records makes name answer NOERROR
// with none.
func (z *Zone) Set(t testing.TB, name string, rrs ...string) {
	t.Helper()
	parsed := make([]dns.RR, 0, len(rrs))
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, rr)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	z.records[name] = parsed
	delete(z.servfail, name)
}

// Fail makes name answer SERVFAIL until it is Set again.
func (z *Zone) Fail(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.servfail[name] = true
}

// Silence makes the server drop every question for name, so a lookup
// times out.
func (z *Zone) Silence(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.silent[name] = true
}

// ServeDNS answers req from the zone.
func (z *Zone) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	z.mu.Lock()
	defer z.mu.Unlock()
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	for _, q := range req.Question {
		if z.silent[q.Name] {
			return
		}
		rrs, known := z.records[q.Name]
		switch {
		case z.servfail[q.Name]:
			m.Rcode = dns.RcodeServerFailure
		case !known:
			m.Rcode = dns.RcodeNameError
		}
		for _, rr := range rrs {
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, rr)
			}
		}
	}
	_ = w.WriteMsg(m)
}

// Start serves an empty zone over UDP on 127.0.0.1 until the test ends and
// returns it with the server's host:port and a resolver that asks only it.
func Start(t testing.TB) (*Zone, string, *net.Resolver) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z := &Zone{records: map[string][]dns.RR{}, servfail: map[string]bool{}, silent: map[string]bool{}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: z, NotifyStartedFunc: func() { close(started) }}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	addr := pc.LocalAddr().String()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
	return z, addr, r
}
