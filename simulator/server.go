package simulator

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vllm-prober/vllm-prober/simulator/engine"
	"github.com/vllm-prober/vllm-prober/simulator/fault"
	"github.com/vllm-prober/vllm-prober/simulator/textgen"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// Server is a running simulator: the engine goroutine plus the HTTP
// handlers. Create it with New and release it with Close.
type Server struct {
	o           Options
	log         *slog.Logger
	reg         *prometheus.Registry
	met         *engine.Metrics
	eng         *engine.Engine
	tok         *textgen.Tokenizer
	faults      *fault.State
	trace       *traceLog
	handler     http.Handler
	created     int64
	fingerprint string
	done        chan struct{}

	idMu  sync.Mutex
	idRNG *rand.Rand

	srvMu    sync.Mutex
	httpSrv  *http.Server
	closeErr error
	closed   bool
}

// New validates o, starts the engine and returns the server. The handler
// is usable at once; Start additionally listens on an address.
func New(o Options) (*Server, error) {
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("simulator options: %w", err)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	s := &Server{
		o:       o,
		log:     logger,
		reg:     reg,
		met:     engine.NewMetrics(reg, o.Model, o.MaxModelLen, o.Config),
		tok:     textgen.NewTokenizer(),
		faults:  fault.NewState(o.Faults, o.Seed),
		trace:   newTraceLog(o.TraceLimit),
		created: time.Now().Unix(),
		done:    make(chan struct{}),
		idRNG:   rand.New(rand.NewPCG(uint64(o.Seed), 0x1d)),
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s|%s|%d", o.Model, o.Version, o.MaxModelLen)
	s.fingerprint = fmt.Sprintf("vllm-%s-%08x", o.Version, h.Sum32())
	s.eng = engine.New(o.Config, o.Seed, s.met)
	go s.eng.Run()
	s.handler = s.routes()
	return s, nil
}

// Handler returns the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler { return s.handler }

// HTTPServer returns an http.Server of the simulator's endpoints that
// closes idle keep-alive connections as vLLM does (Options.KeepAlive), for
// serving on listeners of the caller's own.
func (s *Server) HTTPServer() *http.Server {
	// A zero IdleTimeout falls back to the zero ReadTimeout: no limit.
	return &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: s.o.KeepAlive}
}

// Start listens on addr ("127.0.0.1:0" picks a free loopback port) and
// serves in the background. It returns the base URL, e.g.
// "http://127.0.0.1:41234".
func (s *Server) Start(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := s.HTTPServer()
	s.srvMu.Lock()
	if s.closed || s.httpSrv != nil {
		s.srvMu.Unlock()
		ln.Close()
		return "", errors.New("simulator already started or closed")
	}
	s.httpSrv = srv
	s.srvMu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("simulator server stopped", "err", err)
		}
	}()
	s.log.Info("simulator listening", "address", ln.Addr().String(), "model", s.o.Model)
	return "http://" + ln.Addr().String(), nil
}

// Serve is New and Start in one: it serves a simulator with o on addr and
// returns it with its base URL; nothing is left running when it fails.
func Serve(o Options, addr string) (*Server, string, error) {
	s, err := New(o)
	if err != nil {
		return nil, "", err
	}
	url, err := s.Start(addr)
	if err != nil {
		s.Close()
		return nil, "", err
	}
	return s, url, nil
}

// Close stops serving, ends open streams and stops the engine. It is safe
// to call more than once.
func (s *Server) Close() error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	close(s.done)
	if s.httpSrv != nil {
		s.closeErr = s.httpSrv.Close()
	}
	s.eng.Close()
	return s.closeErr
}

// SetFaults replaces the fault configuration at runtime.
func (s *Server) SetFaults(f Faults) { s.faults.Set(f) }

// Faults returns the current fault configuration.
func (s *Server) Faults() Faults { return s.faults.Get() }

// Registry returns the registry behind /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", s.only(s.handleModels, http.MethodGet))
	mux.HandleFunc("/v1/completions", s.only(func(w http.ResponseWriter, r *http.Request) { s.handleGenerate(w, r, false) }, http.MethodPost))
	mux.HandleFunc("/v1/chat/completions", s.only(func(w http.ResponseWriter, r *http.Request) { s.handleGenerate(w, r, true) }, http.MethodPost))
	mux.HandleFunc("/v1/embeddings", s.only(s.handleEmbeddings, http.MethodPost))
	mux.HandleFunc("/health", s.only(s.handleHealth, http.MethodGet))
	mux.HandleFunc("/ping", s.only(s.handleHealth, http.MethodGet, http.MethodPost))
	mux.HandleFunc("/version", s.only(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, struct {
			Version string `json:"version"`
		}{s.o.Version})
	}, http.MethodGet))
	mux.HandleFunc("/load", s.only(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, struct {
			ServerLoad int `json:"server_load"`
		}{0})
	}, http.MethodGet))
	mux.HandleFunc("/tokenize", s.only(s.handleTokenize, http.MethodPost))
	mux.HandleFunc("/detokenize", s.only(s.handleDetokenize, http.MethodPost))
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/sim/faults", s.only(s.handleFaults, http.MethodGet, http.MethodPost))
	mux.HandleFunc("/sim/trace", s.only(s.handleTrace, http.MethodGet, http.MethodDelete))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return s.auth(mux)
}

// only answers other methods like FastAPI does.
func (s *Server) only(h http.HandlerFunc, methods ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, m := range methods {
			if r.Method == m {
				h(w, r)
				return
			}
		}
		w.Header().Set("Allow", strings.Join(methods, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
	}
}

// auth guards /v1, /v2 and /inference with the API key, like vLLM's
// AuthenticationMiddleware.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.o.APIKey == "" {
		return next
	}
	want := []byte("Bearer " + s.o.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		guarded := strings.HasPrefix(p, "/v1") || strings.HasPrefix(p, "/v2") || strings.HasPrefix(p, "/inference")
		if guarded && r.Method != http.MethodOptions && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeJSON writes v compactly with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(wire.Compact(v))
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, wire.ErrorBody{Error: e.info})
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	select {
	case <-s.done:
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	type permission struct {
		ID                 string          `json:"id"`
		Object             string          `json:"object"`
		Created            int64           `json:"created"`
		AllowCreateEngine  bool            `json:"allow_create_engine"`
		AllowSampling      bool            `json:"allow_sampling"`
		AllowLogprobs      bool            `json:"allow_logprobs"`
		AllowSearchIndices bool            `json:"allow_search_indices"`
		AllowView          bool            `json:"allow_view"`
		AllowFineTuning    bool            `json:"allow_fine_tuning"`
		Organization       string          `json:"organization"`
		Group              json.RawMessage `json:"group"`
		IsBlocking         bool            `json:"is_blocking"`
	}
	type card struct {
		ID          string          `json:"id"`
		Object      string          `json:"object"`
		Created     int64           `json:"created"`
		OwnedBy     string          `json:"owned_by"`
		Root        string          `json:"root"`
		Parent      json.RawMessage `json:"parent"`
		MaxModelLen int             `json:"max_model_len"`
		Permission  []permission    `json:"permission"`
	}
	perm := permission{ID: "modelperm-" + s.randomHex(16), Object: "model_permission", Created: s.created,
		AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*", Group: wire.Null}
	writeJSON(w, http.StatusOK, struct {
		Object string `json:"object"`
		Data   []card `json:"data"`
	}{"list", []card{{ID: s.o.Model, Object: "model", Created: s.created, OwnedBy: "vllm", Root: s.o.Model,
		Parent: wire.Null, MaxModelLen: s.o.MaxModelLen, Permission: []permission{perm}}}})
}

// randomHex returns n deterministic hex digits from the seeded source.
func (s *Server) randomHex(n int) string {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[s.idRNG.IntN(16)]
	}
	return string(b)
}

// sleepCtx waits for d, returning false when ctx ends or the server closes first.
func (s *Server) sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}
