package client

import (
	"net/http"
	"reflect"
	"sync"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/rawread"
)

// Pool shares one HTTP client, and so its keep-alive connections, among
// the Requesters of one target: every probe of a target with the same
// http_client_config and User-Agent sends through the same client. A
// prober of 100 targets × 10 probes then keeps about as many connections
// as requests run at once per target instead of one per pair, each with
// its two transport goroutines and buffers (docs/BENCHMARKS.md, "1,000
// pairs"). A client's idle connections close when its last Requester
// does, and each one after IdleTimeout without a request. It is safe for
// concurrent use; the zero value is ready.
type Pool struct {
	// IdleTimeout is how long a connection may stay idle before it is
	// closed; 0 means DefaultIdleTimeout. Set it before the first use.
	IdleTimeout time.Duration

	mu      sync.Mutex
	clients map[poolKey][]*pooled
}

// DefaultIdleTimeout is how long a probe connection may stay idle before
// the prober closes it. It is below vLLM's keep-alive timeout (5 s, its
// VLLM_HTTP_TIMEOUT_KEEP_ALIVE), so a request is not sent on a connection
// the server is closing at that moment (which fails the request although
// the server is fine); the server would close the connection anyway. So
// a target's idle connections are about as many as its requests that ran
// at once in the last seconds, not in the last minutes: a central prober
// keeps fewer, each with its buffers and transport goroutines.
const DefaultIdleTimeout = 4 * time.Second

// poolKey is what a shared client depends on besides the HTTP client
// config, which is compared in full (pooled.hc).
type poolKey struct{ target, userAgent string }

type pooled struct {
	hc     promconfig.HTTPClientConfig
	client *http.Client
	users  int
}

// get returns the client of target t for userAgent, building it on first
// use, and the function that gives it back.
func (p *Pool) get(t config.Target, userAgent string) (*http.Client, func(), error) {
	k := poolKey{t.Name, userAgent}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.clients[k] {
		if reflect.DeepEqual(e.hc, t.HTTPClientConfig) {
			e.users++
			return e.client, p.releaser(k, e), nil
		}
	}
	c, err := newHTTPClient(t, userAgent, p.IdleTimeout)
	if err != nil {
		return nil, nil, err
	}
	if p.clients == nil {
		p.clients = map[poolKey][]*pooled{}
	}
	e := &pooled{hc: t.HTTPClientConfig, client: c, users: 1}
	p.clients[k] = append(p.clients[k], e)
	return c, p.releaser(k, e), nil
}

// releaser returns the function that gives e back once: the last user
// closes its idle connections and forgets it.
func (p *Pool) releaser(k poolKey, e *pooled) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if e.users--; e.users > 0 {
				return
			}
			e.client.CloseIdleConnections()
			list := p.clients[k]
			for i, o := range list {
				if o == e {
					list = append(list[:i], list[i+1:]...)
					break
				}
			}
			if len(list) == 0 {
				delete(p.clients, k)
			} else {
				p.clients[k] = list
			}
		})
	}
}

// newHTTPClient builds a client of target t of its own, whose connections
// close after idle without a request (0: DefaultIdleTimeout). They read
// with raw system calls: no runtime thread is woken per streamed event
// (internal/rawread).
func newHTTPClient(t config.Target, userAgent string, idle time.Duration) (*http.Client, error) {
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	return config.NewHTTPClient(t.HTTPClientConfig, "vllm_prober_"+t.Name,
		promconfig.WithUserAgent(userAgent), promconfig.WithDialContextFunc(rawread.Dial),
		promconfig.WithIdleConnTimeout(idle))
}
