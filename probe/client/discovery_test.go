package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

func TestRequesterModelDiscovery(t *testing.T) {
	var (
		mu          sync.Mutex
		modelsOK    bool
		modelsCalls int
		served      = "served-model"
		c           capture
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/models":
			modelsCalls++
			if !modelsOK {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"},{"id":"lora"}]}`, served)
		default:
			c.record(r)
			if c.bodies[len(c.bodies)-1]["model"] != served {
				http.Error(w, `{"error":{"message":"The model does not exist.","type":"NotFoundError","code":404}}`, http.StatusNotFound)
				return
			}
			events := slices.Clone(chatOK)
			for i := range events {
				events[i] = strings.ReplaceAll(events[i], `"m"`, fmt.Sprintf("%q", served))
			}
			writeEvents(w, events, true)
		}
	}))
	defer srv.Close()
	tg := rqTarget(srv.URL)
	tg.Model = ""
	r := newTestRequester(t, tg, rqProbe(config.APIChat), Options{})
	step := func(want probe.Disposition, reason string, wantCalls int) {
		t.Helper()
		res := doRequest(context.Background(), r, 1)
		mu.Lock()
		defer mu.Unlock()
		if res.Disposition != want || res.Reason != reason || modelsCalls != wantCalls {
			t.Fatalf("got %s/%s (%s) after %d /v1/models calls, want %s/%s after %d", res.Disposition, res.Reason, res.Error,
				modelsCalls, want, reason, wantCalls)
		}
	}
	step(probe.ServerFailure, probe.ReasonModelDiscovery, 1)
	step(probe.ServerFailure, probe.ReasonModelDiscovery, 2) // retried on the next request
	mu.Lock()
	modelsOK = true
	mu.Unlock()
	step(probe.Accepted, "", 3)
	step(probe.Accepted, "", 3) // cached
	mu.Lock()
	served = "new-model"
	mu.Unlock()
	step(probe.ServerFailure, probe.ReasonHTTP4xx, 3) // 404: forget the model
	step(probe.Accepted, "", 4)
}
