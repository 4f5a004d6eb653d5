package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testclock"
)

// fixedNow and clock are the clock of every test (testclock.Fixed):
// durations are 0, timestamps exact.
var (
	fixedNow = testclock.Fixed
	clock    = testclock.Frozen
)

// manualTicker replaces time.NewTicker: Tick wakes every live loop once.
type manualTicker struct {
	mu    sync.Mutex
	chans []chan time.Time
}

func (m *manualTicker) New(time.Duration) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	m.mu.Lock()
	m.chans = append(m.chans, ch)
	m.mu.Unlock()
	return ch, func() {}
}

func (m *manualTicker) Tick() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ch := range m.chans {
		select {
		case ch <- fixedNow:
		default:
		}
	}
}

// fakeServer is a vLLM stand-in serving /metrics, /v1/models and /version.
type fakeServer struct {
	*httptest.Server
	mu          sync.Mutex
	metrics     string
	contentType string
	status      int
	accept      string
}

func newFakeServer(t testing.TB, metrics string) *fakeServer {
	t.Helper()
	f := &fakeServer{metrics: metrics, contentType: "text/plain; version=0.0.4; charset=utf-8", status: http.StatusOK}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", f.contentType)
		w.WriteHeader(f.status)
		_, _ = w.Write([]byte(f.metrics))
	})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model"},{"id":"lora-a"}]}`))
	})
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"version":"0.26.0"}`))
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) set(status int, contentType, metrics string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.contentType, f.metrics = status, contentType, metrics
}

// sample returns the parseable vLLM metrics sample (the reference sample
// without the ellipses its authors used to abbreviate it).
func sample(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/vllm-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// scraperHarness runs a ServerScraper with a manual ticker and lets a test
// wait for each target's next published scrape.
type scraperHarness struct {
	*ServerScraper
	ticker    *manualTicker
	published chan string
	applied   []string // targets of the last Apply
}

func newHarness(t testing.TB, o ScraperOptions) *scraperHarness {
	t.Helper()
	h := &scraperHarness{ticker: &manualTicker{}, published: make(chan string, 64)}
	if o.Now == nil {
		o.Now = clock
	}
	o.NewTicker = h.ticker.New
	h.ServerScraper = NewServerScraper(o)
	h.onPublish = func(target string) {
		select {
		case h.published <- target:
		default:
		}
	}
	t.Cleanup(h.Stop)
	return h
}

// Apply makes the scraped targets those of cfg, with its settings, through
// the calls the daemon and the engine make: Configure, then PairStopped
// for targets cfg lacks and PairStarted for every target of cfg, as one
// pair each.
func (h *scraperHarness) Apply(cfg *config.Config) {
	h.Configure(cfg.Global.ServerMetrics)
	for _, name := range h.applied {
		if _, ok := cfg.Target(name); !ok {
			h.PairStopped(config.PairKey{Target: name, Probe: "p"})
		}
	}
	h.applied = h.applied[:0]
	for _, t := range cfg.Targets {
		h.PairStarted(config.Pair{Key: config.PairKey{Target: t.Name, Probe: "p"}, Target: t})
		h.applied = append(h.applied, t.Name)
	}
}

// wait blocks until every named target published a scrape.
func (h *scraperHarness) wait(t testing.TB, targets ...string) {
	t.Helper()
	want := map[string]int{}
	for _, n := range targets {
		want[n]++
	}
	deadline := time.After(5 * time.Second)
	for len(want) > 0 {
		select {
		case n := <-h.published:
			if want[n]--; want[n] <= 0 {
				delete(want, n)
			}
		case <-deadline:
			t.Fatalf("timed out waiting for scrapes of %v", want)
		}
	}
}

// tick triggers one scrape of every loop and waits for the named targets.
func (h *scraperHarness) tick(t testing.TB, targets ...string) {
	t.Helper()
	h.ticker.Tick()
	h.wait(t, targets...)
}

// serverTarget returns a target config scraping f.
func serverTarget(name string, f *fakeServer) config.Target {
	return config.Target{Name: name, URL: f.URL, MetricsPath: "/metrics"}
}

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }

// countingHandler counts log records by message.
type countingHandler struct {
	mu     sync.Mutex
	counts map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = map[string]int{}
	}
	h.counts[r.Message]++
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[msg]
}

// startPairs starts every pair of cfg on a new collector c, as the engine
// does.
func startPairs(c *collector.Collector, cfg *config.Config) {
	for _, p := range cfg.Pairs() {
		c.PairStarted(p)
	}
}
