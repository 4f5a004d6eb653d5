package discovery

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/common/model"
)

// zone is what the test DNS server answers: records by name (fully
// qualified, lower case), SERVFAIL for the names in servfail, nothing at
// all for the names in silent, NXDOMAIN for any other name.
type zone struct {
	mu       sync.Mutex
	records  map[string][]dns.RR
	servfail map[string]bool
	silent   map[string]bool
}

// set replaces the records of name, given in zone file syntax.
func (z *zone) set(t *testing.T, name string, rrs ...string) {
	t.Helper()
	var parsed []dns.RR
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

// fail makes name answer SERVFAIL.
func (z *zone) fail(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.servfail[name] = true
}

func (z *zone) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
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

// startDNS serves a zone on 127.0.0.1 and returns it with a resolver that
// asks only it.
func startDNS(t *testing.T) (*zone, *net.Resolver) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z := &zone{records: map[string][]dns.RR{}, servfail: map[string]bool{}, silent: map[string]bool{"slow.test.": true}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: z, NotifyStartedFunc: func() { close(started) }}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	return z, r
}

func TestDNSLookup(t *testing.T) {
	z, r := startDNS(t)
	z.set(t, "vllm.test.", "vllm.test. 5 IN A 10.0.0.2", "vllm.test. 5 IN A 10.0.0.1",
		"vllm.test. 5 IN AAAA fd00::2", "vllm.test. 5 IN AAAA fd00::1")
	z.set(t, "other.test.", "other.test. 5 IN A 10.0.0.3", "other.test. 5 IN A 10.0.0.1")
	z.set(t, "empty.test.")
	z.set(t, "_http._tcp.vllm.test.",
		"_http._tcp.vllm.test. 5 IN SRV 0 0 8001 vllm-1.vllm.test.",
		"_http._tcp.vllm.test. 5 IN SRV 0 0 8000 vllm-0.vllm.test.",
		"_http._tcp.vllm.test. 5 IN SRV 0 0 8000 .")
	for _, tc := range []struct {
		name string
		c    DNSConfig
		want []Replica
	}{
		{"A", DNSConfig{Names: []string{"vllm.test."}, Port: 8000},
			replicas("10.0.0.1:8000", "10.0.0.2:8000")},
		{"A, default type, two names: union", DNSConfig{Names: []string{"vllm.test", "other.test"}, Port: 8000},
			replicas("10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000")},
		{"AAAA", DNSConfig{Names: []string{"vllm.test."}, Type: TypeAAAA, Port: 8000},
			replicas("[fd00::1]:8000", "[fd00::2]:8000")},
		{"SRV: target names kept, trailing dot stripped, '.' skipped", DNSConfig{Names: []string{"_http._tcp.vllm.test."}, Type: TypeSRV},
			replicas("vllm-0.vllm.test:8000", "vllm-1.vllm.test:8001")},
		{"NXDOMAIN is an empty set", DNSConfig{Names: []string{"gone.test."}, Port: 8000}, replicas()},
		{"no records is an empty set", DNSConfig{Names: []string{"empty.test."}, Port: 8000}, replicas()},
		{"no SRV records is an empty set", DNSConfig{Names: []string{"empty.test."}, Type: TypeSRV}, replicas()},
		{"a name without records adds nothing", DNSConfig{Names: []string{"gone.test.", "other.test."}, Port: 9000},
			replicas("10.0.0.1:9000", "10.0.0.3:9000")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(Config{DNS: &tc.c}, Options{Resolver: r})
			if err != nil {
				t.Fatal(err)
			}
			e := firstCall(t, d)
			if e.err != nil {
				t.Fatal(e.err)
			}
			if len(e.set) != len(tc.want) || (len(tc.want) > 0 && !equal(e.set, tc.want)) {
				t.Errorf("got %v, want %v", e.set, tc.want)
			}
		})
	}
}

// TestDNSChanges checks that a SERVFAIL fails the refresh and keeps the
// last set, and that changed answers are reported.
func TestDNSChanges(t *testing.T) {
	z, r := startDNS(t)
	z.set(t, "vllm.test.", "vllm.test. 5 IN A 10.0.0.1")
	z.set(t, "other.test.", "other.test. 5 IN A 10.0.0.5")
	c := DNSConfig{Names: []string{"vllm.test.", "other.test."}, Port: 8000, Refresh: model.Duration(50 * time.Millisecond)}
	d, err := New(Config{DNS: &c}, Options{Resolver: r})
	if err != nil {
		t.Fatal(err)
	}
	run := start(t, d)
	run.wantUpdate(replicas("10.0.0.1:8000", "10.0.0.5:8000"), false)

	z.set(t, "vllm.test.", "vllm.test. 5 IN A 10.0.0.1", "vllm.test. 5 IN A 10.0.0.2")
	run.wantUpdate(replicas("10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.5:8000"), false)

	z.fail("other.test.")
	run.wantFail("dns: A records of other.test.: lookup other.test. on ", ": server misbehaving")
	// The set is what it was before the failure, so answering it again
	// reports nothing: the next update is the next change.
	z.set(t, "other.test.", "other.test. 5 IN A 10.0.0.5")
	time.Sleep(200 * time.Millisecond)
	z.set(t, "vllm.test.", "vllm.test. 5 IN A 10.0.0.2")
	run.wantUpdate(replicas("10.0.0.2:8000", "10.0.0.5:8000"), true)

	z.set(t, "vllm.test.")
	z.set(t, "other.test.")
	run.wantUpdate(replicas(), false)
}

// TestDNSTimeout checks that a server that does not answer fails the
// refresh once the refresh interval has passed.
func TestDNSTimeout(t *testing.T) {
	_, r := startDNS(t)
	c := DNSConfig{Names: []string{"slow.test."}, Port: 8000, Refresh: model.Duration(300 * time.Millisecond)}
	d, err := New(Config{DNS: &c}, Options{Resolver: r})
	if err != nil {
		t.Fatal(err)
	}
	e := firstCall(t, d)
	want := "dns: A records of slow.test.: lookup slow.test.: i/o timeout (refresh took longer than the 300ms refresh interval)"
	if e.err == nil || e.err.Error() != want {
		t.Errorf("got %v, want fail(%s)", e, want)
	}
}
