package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// startWebDaemon runs the daemon in-process with limits on a loopback
// port, probing simURL (a simulator by default), and returns its address.
func startWebDaemon(t *testing.T, limits webLimits, simURL ...string) string {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "c.yml")
	if len(simURL) == 0 {
		simURL = append(simURL, startSimulator(t))
	}
	writeConfig(t, cfgPath, simURL[0], 1, "")
	addrs, systemd, webConfig := []string{"127.0.0.1:0"}, false, ""
	f := &daemonFlags{configFile: cfgPath, telemetryPath: "/metrics", webLimits: limits,
		web: &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &webConfig}}
	ctx, cancel := context.WithCancel(context.Background())
	bound := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runDaemon(ctx, slog.New(slog.DiscardHandler), f, daemonHooks{
			listening: func(a []net.Addr) { bound <- a[0].String() },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case a := <-bound:
		return a
	case err := <-done:
		t.Fatalf("daemon: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not listen")
	}
	return ""
}

// keepAliveConn is a raw HTTP/1.1 connection that sends one request and
// then stays open, idle.
type keepAliveConn struct {
	net.Conn
	br *bufio.Reader
}

func dialKeepAlive(t *testing.T, addr string) *keepAliveConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keepAliveConn{Conn: c, br: bufio.NewReader(c)}
}

// get sends GET /-/healthy and reads the answer within wait; it returns
// false when none came in time.
func (c *keepAliveConn) get(t *testing.T, wait time.Duration) bool {
	t.Helper()
	if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: prober\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(c.br, nil)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return true
}

// closedWithin reports whether the server closed the connection within d.
func (c *keepAliveConn) closedWithin(d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.br.ReadByte()
	return errors.Is(err, io.EOF)
}

func TestWebIdleConnectionsClosed(t *testing.T) {
	limits := defaultWebLimits
	limits.idleTimeout = 200 * time.Millisecond
	addr := startWebDaemon(t, limits)
	var conns []*keepAliveConn
	for range 5 {
		c := dialKeepAlive(t, addr)
		if !c.get(t, 10*time.Second) {
			t.Fatal("no answer")
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		if !c.closedWithin(10 * time.Second) {
			t.Errorf("idle keep-alive connection %d still open after 10s (idle timeout 200ms)", i)
		}
	}
}

func TestWebConnectionCap(t *testing.T) {
	limits := defaultWebLimits
	limits.maxConnections = 2
	addr := startWebDaemon(t, limits)
	held := []*keepAliveConn{dialKeepAlive(t, addr), dialKeepAlive(t, addr)}
	for _, c := range held {
		if !c.get(t, 10*time.Second) {
			t.Fatal("no answer")
		}
	}
	third := dialKeepAlive(t, addr)
	if third.get(t, 300*time.Millisecond) {
		t.Fatal("a third connection was served while two were held with a cap of 2")
	}
	held[0].Close()
	_ = third.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(third.br, nil)
	if err != nil {
		t.Fatalf("the waiting connection got no answer once one closed: %v", err)
	}
	resp.Body.Close()
}

func TestWebMaxConnectionsFlag(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "c.yml")
	writeConfig(t, cfgPath, "http://127.0.0.1:1", 1, "")
	code, out := runBinary(t, "--web.max-connections=0", "--web.listen-address=127.0.0.1:0", "--config.file="+cfgPath)
	if code != 2 || !strings.Contains(out, "--web.max-connections") {
		t.Errorf("--web.max-connections=0: exit %d, want 2 naming the flag:\n%s", code, out)
	}
}

// TestWebProbeOutlastsWriteTimeout checks that /probe, whose request may
// take the probe's timeout, is not cut by the server's write timeout.
func TestWebProbeOutlastsWriteTimeout(t *testing.T) {
	slow := startSimulator(t, func(o *simulator.Options) { o.PrefillBase = time.Second })
	limits := defaultWebLimits
	limits.writeTimeout = 300 * time.Millisecond
	addr := startWebDaemon(t, limits, slow)
	code, body := get(t, http.MethodGet, "http://"+addr+"/probe?target=sim&probe=chat")
	if code != http.StatusOK || !strings.Contains(body, "vllm_probe_requests_total") {
		t.Errorf("/probe: %d %.200s", code, body)
	}
}

// TestProbeEndpointUnpairedPair: /probe with a target and a probe that both
// exist but are not paired (the target's probes list leaves the probe out)
// answers 400 and says so.
func TestProbeEndpointUnpairedPair(t *testing.T) {
	simURL := startSimulator(t)
	cfg := fmt.Sprintf(`targets:
  - {name: a, url: %[1]s, probes: [chat]}
  - {name: b, url: %[1]s, probes: [other]}
probes:
  - {name: chat, api: chat, rate: 0.2, workload: {random: {input_tokens: 8, output_tokens: 4}}}
  - {name: other, api: completions, rate: 0.2, workload: {random: {input_tokens: 8, output_tokens: 4}}}
`, simURL)
	cfgPath := testfile.Temp(t, "c.yml", cfg)
	d := startDaemon(t, "--config.file="+cfgPath)
	for _, tc := range []struct {
		query string
		code  int
		body  string
	}{
		{"target=a&probe=chat", 200, `vllm_probe_success{probe="chat",target="a"}`},
		{"target=b&probe=other", 200, `vllm_probe_success{probe="other",target="b"}`},
		{"target=a&probe=other", 400, `probe "other" is not paired with target "a"`},
		{"target=b&probe=chat", 400, `probe "chat" is not paired with target "b"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body := get(t, http.MethodGet, d.URL("/probe?"+tc.query))
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%d %q, want %d containing %q", code, body, tc.code, tc.body)
			}
		})
	}
}
