//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/dnstest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestFleetDNS runs the binary with two targets found through a DNS
// server of the test's own (--discovery.dns-server): one by A records,
// whose replicas are simulators on 127.0.0.1 and 127.0.0.2 sharing a
// port, one by SRV records pointing at localhost with each simulator's
// port. Records added and removed on the server are followed within a
// refresh, the replicas are reached at the addresses found (requests
// accepted), and offered = sum of dispositions + in flight at every scrape.
func TestFleetDNS(t *testing.T) {
	_, srv := startFleetSims(t, 3, simulator.Faults{})
	ports := make([]uint16, len(srv))
	for i, a := range srv {
		_, p, _ := net.SplitHostPort(a)
		n, _ := strconv.Atoi(p)
		ports[i] = uint16(n)
	}
	aPort := startSimPair(t)

	z, dnsAddr, _ := dnstest.Start(t)
	z.Set(t, "a.fleet.test.", aRecord("a.fleet.test.", "127.0.0.1"))
	z.Set(t, "srv.fleet.test.", srvRecord("srv.fleet.test.", ports[0]), srvRecord("srv.fleet.test.", ports[1]))

	dir := t.TempDir()
	cfg := testfile.Write(t, dir, "c.yml", fmt.Sprintf(`targets:
  - name: by-a
    model: sim-llama
    metrics_path: ""
    discovery: {dns: {names: [a.fleet.test], type: A, port: %d, refresh: 1s}}
  - name: by-srv
    model: sim-llama
    metrics_path: ""
    discovery: {dns: {names: [srv.fleet.test], type: SRV, refresh: 1s}}
`, aPort)+fleetProbe)
	if code, out := daemontest.Run(t, binary, "--config.file="+cfg, "--discovery.dns-server=no-port"); code != 2 || !strings.Contains(out, "--discovery.dns-server") {
		t.Errorf("--discovery.dns-server=no-port: exit %d, want 2 naming the flag:\n%s", code, out)
	}
	p := daemontest.Start(t, binary, "--config.file="+cfg, "--discovery.dns-server="+dnsAddr)
	w := watchFleet(t, p)

	a1, a2 := net.JoinHostPort("127.0.0.1", strconv.Itoa(aPort)), net.JoinHostPort("127.0.0.2", strconv.Itoa(aPort))
	local := func(port uint16) string { return net.JoinHostPort("localhost", strconv.Itoa(int(port))) }
	w.waitProbed(t, 20*time.Second, "by-a", []string{a1})
	w.waitProbed(t, 20*time.Second, "by-srv", []string{local(ports[0]), local(ports[1])})

	z.Set(t, "a.fleet.test.", aRecord("a.fleet.test.", "127.0.0.1"), aRecord("a.fleet.test.", "127.0.0.2"))
	z.Set(t, "srv.fleet.test.", srvRecord("srv.fleet.test.", ports[1]), srvRecord("srv.fleet.test.", ports[2]))
	w.waitProbed(t, 10*time.Second, "by-a", []string{a1, a2})
	w.waitProbed(t, 10*time.Second, "by-srv", []string{local(ports[1]), local(ports[2])})

	z.Set(t, "a.fleet.test.", aRecord("a.fleet.test.", "127.0.0.2"))
	w.waitProbed(t, 10*time.Second, "by-a", []string{a2})
	for _, id := range []pairID{{"by-a", "chat", a2}, {"by-srv", "chat", local(ports[1])}, {"by-srv", "chat", local(ports[2])}} {
		daemontest.WaitFor(t, 10*time.Second, fmt.Sprintf("an accepted request of %s", id), func() bool {
			c, _ := w.pair(id)
			return c.byDisposition["accepted"] > 0
		})
	}
	w.halt()
	w.check(t)
}

// startSimPair starts two simulators on one port, at 127.0.0.1 and
// 127.0.0.2 (Linux routes 127.0.0.0/8 to the loopback), and returns it.
func startSimPair(t *testing.T) int {
	t.Helper()
	for range 5 {
		s1, u, err := simulator.Serve(simulator.DefaultOptions(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s1.Close() })
		_, port, _ := net.SplitHostPort(hostPort(t, u))
		s2, _, err := simulator.Serve(simulator.DefaultOptions(), "127.0.0.2:"+port)
		if err != nil {
			t.Logf("port %s is taken on 127.0.0.2, trying another: %v", port, err)
			continue
		}
		t.Cleanup(func() { _ = s2.Close() })
		n, _ := strconv.Atoi(port)
		return n
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return 0
}

// aRecord is an A record of name in zone file syntax.
func aRecord(name, ip string) string { return fmt.Sprintf("%s 1 IN A %s", name, ip) }

// srvRecord points name at localhost in zone file syntax: Go's resolver
// refuses an IP as an SRV target, and the prober resolves the target name
// when it connects.
func srvRecord(name string, port uint16) string {
	return fmt.Sprintf("%s 1 IN SRV 0 1 %d localhost.", name, port)
}
