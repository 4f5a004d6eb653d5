package discovery

import (
	"net"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/internal/dnstest"
)

// startDNS serves a zone on 127.0.0.1, whose name slow.test. never
// answers, and returns it with a resolver that asks only it.
func startDNS(t *testing.T) (*dnstest.Zone, *net.Resolver) {
	t.Helper()
	z, _, r := dnstest.Start(t)
	z.Silence("slow.test.")
	return z, r
}

func TestDNSLookup(t *testing.T) {
	z, r := startDNS(t)
	z.Set(t, "vllm.test.", "vllm.test. 5 IN A 10.0.0.2", "vllm.test. 5 IN A 10.0.0.1",
		"vllm.test. 5 IN AAAA fd00::2", "vllm.test. 5 IN AAAA fd00::1")
	z.Set(t, "other.test.", "other.test. 5 IN A 10.0.0.3", "other.test. 5 IN A 10.0.0.1")
	z.Set(t, "empty.test.")
	z.Set(t, "_http._tcp.vllm.test.",
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
	z.Set(t, "vllm.test.", "vllm.test. 5 IN A 10.0.0.1")
	z.Set(t, "other.test.", "other.test. 5 IN A 10.0.0.5")
	c := DNSConfig{Names: []string{"vllm.test.", "other.test."}, Port: 8000, Refresh: model.Duration(50 * time.Millisecond)}
	d, err := New(Config{DNS: &c}, Options{Resolver: r})
	if err != nil {
		t.Fatal(err)
	}
	run := start(t, d)
	run.wantUpdate(replicas("10.0.0.1:8000", "10.0.0.5:8000"), false)

	z.Set(t, "vllm.test.", "vllm.test. 5 IN A 10.0.0.1", "vllm.test. 5 IN A 10.0.0.2")
	run.wantUpdate(replicas("10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.5:8000"), false)

	z.Fail("other.test.")
	run.wantFail("dns: A records of other.test.: lookup other.test. on ", ": server misbehaving")
	// The set is what it was before the failure, so answering it again
	// reports nothing: the next update is the next change.
	z.Set(t, "other.test.", "other.test. 5 IN A 10.0.0.5")
	time.Sleep(200 * time.Millisecond)
	z.Set(t, "vllm.test.", "vllm.test. 5 IN A 10.0.0.2")
	run.wantUpdate(replicas("10.0.0.2:8000", "10.0.0.5:8000"), true)

	z.Set(t, "vllm.test.")
	z.Set(t, "other.test.")
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
