package schedule_test

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
	"github.com/vllm-prober/vllm-prober/simulator"
)

const (
	// matrixRate is low, and matrixDuration long, so the 21 pairs need
	// little CPU per second; each pair still offers 20 requests.
	matrixRate    = 4.0 // requests/s of every pair, constant gaps
	matrixTimeout = 4 * time.Second
	// matrixSlow is the delay of the slow faults, far past matrixTimeout,
	// which is itself far above a loaded machine's scheduling delays.
	matrixSlow = 2 * matrixTimeout
	// matrixMaxInFlight is far above the requests a timing-out pair keeps
	// outstanding (matrixRate x matrixTimeout): shedding is not tested here.
	matrixMaxInFlight = 4 * int(matrixRate*matrixTimeout/time.Second)
	matrixDuration    = 5 * time.Second
	matrixMaxBody     = 128 << 10 // client.Options.MaxBodyBytes
	matrixMaxLine     = 64 << 10  // client.Options.MaxLineBytes
)

// faultCase is one target whose every request meets the same fault.
type faultCase struct {
	name   string
	url    func(t *testing.T) string
	probe  string // "" = chat
	want   probe.Disposition
	reason string
	status int    // ledger http_status, 0 = not checked
	flag   string // a flag every record must carry
}

func simCase(name string, f simulator.Faults, want probe.Disposition, reason string, status int, flag string) faultCase {
	return faultCase{name: name, url: func(t *testing.T) string { return relSim(t, 1, f) }, want: want, reason: reason, status: status, flag: flag}
}

// faultCases covers every simulator fault and the network and protocol
// failures the simulator cannot produce.
func faultCases() []faultCase {
	sf := probe.ServerFailure
	return []faultCase{
		simCase("sim http_500", simulator.Faults{HTTP500: 1}, sf, probe.ReasonHTTP5xx, 500, ""),
		simCase("sim http_503", simulator.Faults{HTTP503: 1}, sf, probe.ReasonHTTP5xx, 503, ""),
		simCase("sim http_429", simulator.Faults{HTTP429: 1}, sf, probe.ReasonHTTP429, 429, ""),
		simCase("sim slow_headers", simulator.Faults{SlowHeaders: 1, SlowHeadersDelay: matrixSlow}, probe.ClientTimeout, probe.ReasonTimeout, 0, ""),
		simCase("sim stall", simulator.Faults{Stall: 1, StallDuration: matrixSlow}, probe.ClientTimeout, probe.ReasonTimeout, 200, ""),
		simCase("sim disconnect", simulator.Faults{Disconnect: 1}, sf, probe.ReasonDisconnect, 200, ""),
		simCase("sim error_event", simulator.Faults{ErrorEvent: 1}, sf, probe.ReasonStreamError, 200, ""),
		simCase("sim malformed_event", simulator.Faults{MalformedEvent: 1}, sf, probe.ReasonProtocol, 200, ""),
		simCase("sim no_done", simulator.Faults{NoDone: 1}, sf, probe.ReasonNoDone, 200, ""),
		simCase("sim wrong_model", simulator.Faults{WrongModel: 1}, probe.QualityFailure, probe.ReasonQuality, 200, ledger.FlagCheckPrefix+probe.CheckModel),
		simCase("sim bad_answer", simulator.Faults{BadAnswer: 1}, probe.QualityFailure, probe.ReasonQuality, 200, ledger.FlagCheckPrefix+probe.CheckExpect),
		{name: "sim extra_ttft", url: func(t *testing.T) string { return relSim(t, 1, simulator.Faults{ExtraTTFT: 300 * time.Millisecond}) },
			probe: "chat-slo", want: probe.LatencyFailure, reason: probe.ReasonLatency, status: 200, flag: ledger.FlagSLOPrefix + probe.SLOTTFT},
		{name: "connection refused", url: refusedURL, want: sf, reason: probe.ReasonConnect},
		{name: "dns failure", url: func(*testing.T) string { return "http://vllm-prober-test.invalid:8000" }, want: sf, reason: probe.ReasonDNS},
		{name: "tls handshake failure", url: untrustedTLS, want: sf, reason: probe.ReasonTLS},
		{name: "close after headers", url: handlerURL(closeAfterHeaders), want: sf, reason: probe.ReasonDisconnect, status: 200},
		{name: "body far too large", url: handlerURL(endlessFastEvents), want: sf, reason: probe.ReasonProtocol, status: 200},
		{name: "line far too long", url: handlerURL(endlessLine), want: sf, reason: probe.ReasonProtocol, status: 200},
		{name: "events forever", url: handlerURL(slowEventsForever), want: probe.ClientTimeout, reason: probe.ReasonTimeout, status: 200},
		{name: "200 text/html", url: handlerURL(htmlPage), want: sf, reason: probe.ReasonProtocol, status: 200},
	}
}

func handlerURL(h http.HandlerFunc) func(t *testing.T) string {
	return func(t *testing.T) string { return relServer(t, h) }
}

// untrustedTLS is a TLS server whose self-signed certificate no CA backs.
// The system roots the client verifies against are loaded first: loading
// them once per process takes seconds under the race detector on a loaded
// machine, and is not what the case is about.
func untrustedTLS(t *testing.T) string {
	if _, err := x509.SystemCertPool(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(htmlPage))
	srv.Config.ErrorLog = nil
	t.Cleanup(srv.Close)
	return srv.URL
}

// closeAfterHeaders answers 200 with a chunked event-stream header, then
// closes the connection.
func closeAfterHeaders(w http.ResponseWriter, _ *http.Request) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	_ = buf.Flush()
	conn.Close()
}

const tokenEvent = `data: {"id":"x","object":"chat.completion.chunk","model":"sim-llama","choices":[{"index":0,"delta":{"content":"1"},"finish_reason":null}]}` + "\n\n"

func streamHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// endlessFastEvents streams valid token events as fast as it can.
func endlessFastEvents(w http.ResponseWriter, r *http.Request) {
	streamHeader(w)
	block := []byte(strings.Repeat(tokenEvent, 64))
	for r.Context().Err() == nil {
		if _, err := w.Write(block); err != nil {
			return
		}
	}
}

// endlessLine streams one data line that never ends.
func endlessLine(w http.ResponseWriter, r *http.Request) {
	streamHeader(w)
	_, _ = w.Write([]byte(`data: {"choices":[{"delta":{"content":"`))
	block := []byte(strings.Repeat("x", 8192))
	for r.Context().Err() == nil {
		if _, err := w.Write(block); err != nil {
			return
		}
	}
}

// slowEventsForever sends a token event every 20ms until the client leaves.
func slowEventsForever(w http.ResponseWriter, r *http.Request) {
	streamHeader(w)
	rc := http.NewResponseController(w)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := w.Write([]byte(tokenEvent)); err != nil {
			return
		}
		_ = rc.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

func htmlPage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte("<html><body>Welcome to nginx!</body></html>"))
}

// matrixRun is what one engine run against every fault case produced.
type matrixRun struct {
	recs   []ledger.Record
	counts map[string]*pairCounts
}

// runMatrix runs one engine with a target per fault case plus a healthy
// target, every pair at matrixRate, for matrixDuration.
func runMatrix(t *testing.T, cases []faultCase) matrixRun {
	t.Helper()
	chat := relChatProbe("chat", matrixRate, matrixTimeout)
	slo := relChatProbe("chat-slo", matrixRate, matrixTimeout)
	slo.SLO.TTFT = model.Duration(150 * time.Millisecond)
	chat.MaxInFlight, slo.MaxInFlight = matrixMaxInFlight, matrixMaxInFlight
	cfg := &config.Config{Probes: []config.Probe{chat, slo}}
	cfg.Targets = append(cfg.Targets, config.Target{Name: "healthy", URL: relSim(t, 2, simulator.Faults{}), Model: "sim-llama", Probes: []string{"chat"}})
	for i, c := range cases {
		p := c.probe
		if p == "" {
			p = "chat"
		}
		cfg.Targets = append(cfg.Targets, config.Target{Name: fmt.Sprintf("t%02d", i), URL: c.url(t), Model: "sim-llama", Probes: []string{p}})
	}
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	lg, err := ledger.Open(config.Ledger{Path: path, RecordText: config.RecordTextFailures}, nil)
	if err != nil {
		t.Fatal(err)
	}
	coll, reg := newCollectorRegistry()
	e := schedule.NewEngine(schedule.EngineOptions{
		// Grace lets the last requests end by their own timeout.
		Sinks: []probe.Sink{coll, lg}, Grace: 2 * matrixTimeout,
		NewRequester: func(tg config.Target, p config.Probe) (schedule.Sender, error) {
			return client.New(tg, p, client.Options{MaxBodyBytes: matrixMaxBody, MaxLineBytes: matrixMaxLine})
		},
	})
	if err := e.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(matrixDuration)
	recs := schedule.StopAndReadLedger(t, e, lg, path)
	return matrixRun{recs: recs, counts: gatherCounts(t, reg)}
}

// TestFaultMatrix runs every fault at once, each on its own target of one
// engine beside a healthy target, and checks each target's disposition,
// reason, ledger records and counters, and that every target, healthy or
// not, kept its offered rate.
func TestFaultMatrix(t *testing.T) {
	cases := faultCases()
	run := runMatrix(t, cases)
	checkLedgerMatches(t, run.recs, run.counts)
	byTarget := map[string][]ledger.Record{}
	for _, r := range run.recs {
		byTarget[r.Target] = append(byTarget[r.Target], r)
	}
	wantOffered := matrixRate * matrixDuration.Seconds()
	checkRate := func(t *testing.T, key string) {
		if got := run.counts[key].offered; got < wantOffered-3 || got > wantOffered+3 {
			t.Errorf("%s offered %g requests in %s, want %g±3 (open loop)", key, got, matrixDuration, wantOffered)
		}
	}
	t.Run("healthy target", func(t *testing.T) {
		checkRate(t, "healthy/chat")
		for _, r := range byTarget["healthy"] {
			if r.Disposition != probe.Accepted {
				t.Errorf("healthy seq %d: %s/%s %s", r.Seq, r.Disposition, r.Reason, r.Error)
			}
		}
	})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			target := fmt.Sprintf("t%02d", i)
			p := cmpOr(c.probe, "chat")
			checkRate(t, target+"/"+p)
			recs := byTarget[target]
			if len(recs) == 0 {
				t.Fatal("no ledger records")
			}
			for _, r := range recs {
				checkFaultRecord(t, c, r)
			}
			pc := run.counts[target+"/"+p]
			if n := float64(len(recs)); pc.dispositions[string(c.want)] != n || (c.want != probe.Accepted && pc.reasons[c.reason] != n) {
				t.Errorf("counters %v %v, want %g %s/%s", pc.dispositions, pc.reasons, n, c.want, c.reason)
			}
		})
	}
}

func checkFaultRecord(t *testing.T, c faultCase, r ledger.Record) {
	t.Helper()
	if r.Disposition != c.want || r.Reason != c.reason {
		t.Errorf("seq %d: %s/%s (%s), want %s/%s", r.Seq, r.Disposition, r.Reason, r.Error, c.want, c.reason)
	}
	if c.status != 0 && r.HTTPStatus != c.status {
		t.Errorf("seq %d: http_status %d, want %d", r.Seq, r.HTTPStatus, c.status)
	}
	if c.flag != "" && !slices.Contains(r.Flags, c.flag) {
		t.Errorf("seq %d: flags %v lack %s", r.Seq, r.Flags, c.flag)
	}
	if r.Sent == nil || r.RequestID == "" {
		t.Errorf("seq %d: sent %v, request id %q: every request here is sent", r.Seq, r.Sent, r.RequestID)
	}
	if r.Disposition != probe.Accepted && r.Error == "" && r.Reason != probe.ReasonQuality && r.Reason != probe.ReasonLatency {
		t.Errorf("seq %d: %s without an error message", r.Seq, r.Disposition)
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
