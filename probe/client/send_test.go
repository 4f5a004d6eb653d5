package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/probe"
)

func TestRequesterFaults(t *testing.T) {
	badRequest := `{"error":{"message":"max_tokens=99999 cannot be greater than max_model_len=4096.","type":"BadRequestError","param":"max_tokens","code":400}}`
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		edit      func(o *Options, p *config.Probe)
		want      probe.Disposition
		reason    string
		status    int
		errRE     string
		wantFlags []string
		absent    []string // phases that did not complete
	}{
		{name: "ok", handler: streamHandler(chatOK), want: probe.Accepted, status: 200},
		{name: "400 with vllm error", handler: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, badRequest, http.StatusBadRequest) },
			want: probe.ServerFailure, reason: probe.ReasonHTTP4xx, status: 400, errRE: `^http 400: BadRequestError: max_tokens=99999 cannot`},
		{name: "401 string error", handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":"Unauthorized"}`, http.StatusUnauthorized)
		},
			want: probe.ServerFailure, reason: probe.ReasonHTTP4xx, status: 401, errRE: `^http 401: Unauthorized$`},
		{name: "429", handler: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "slow down", http.StatusTooManyRequests) },
			want: probe.ServerFailure, reason: probe.ReasonHTTP429, status: 429, errRE: `^http 429: slow down$`},
		{name: "500 with vllm error", handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}`, http.StatusInternalServerError)
		}, want: probe.ServerFailure, reason: probe.ReasonHTTP5xx, status: 500, errRE: `^http 500: InternalServerError: Internal server error$`},
		{name: "503 empty body", handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) },
			want: probe.ServerFailure, reason: probe.ReasonHTTP5xx, status: 503, errRE: `^http 503: Service Unavailable$`},
		{name: "error event", handler: streamHandler([]string{chatOK[0], `{"error": {"message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}}`}),
			want: probe.ServerFailure, reason: probe.ReasonStreamError, status: 200, errRE: `^InternalServerError: Internal server error$`},
		{name: "malformed event", handler: streamHandler([]string{chatOK[0], `{"choices":[{"delta":`}),
			want: probe.ServerFailure, reason: probe.ReasonProtocol, status: 200, errRE: `^malformed event: `},
		{name: "oversized line", handler: streamHandler([]string{chatOK[0], `{"choices":[{"delta":{"content":"` + strings.Repeat("x", 5000) + `"}}]}`}),
			edit: func(o *Options, _ *config.Probe) { o.MaxLineBytes = 4096 },
			want: probe.ServerFailure, reason: probe.ReasonProtocol, status: 200, errRE: `line longer than the limit`},
		{name: "huge body", handler: streamHandler(slices.Repeat(chatOK[1:2], 200)),
			edit: func(o *Options, _ *config.Probe) { o.MaxBodyBytes = 8192 },
			want: probe.ServerFailure, reason: probe.ReasonProtocol, status: 200, errRE: `body longer than the limit`},
		{name: "no done", handler: func(w http.ResponseWriter, _ *http.Request) { writeEvents(w, chatOK, false) },
			want: probe.ServerFailure, reason: probe.ReasonNoDone, status: 200, errRE: `without \[DONE\]`},
		{name: "text/html 200", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>proxy login</html>")
		}, want: probe.ServerFailure, reason: probe.ReasonProtocol, status: 200, errRE: `unexpected content type "text/html"`},
		{name: "reset mid-stream", handler: resetHandler, want: probe.ServerFailure, reason: probe.ReasonDisconnect, status: 200},
		{name: "stall times out", handler: stallHandler,
			edit: func(_ *Options, p *config.Probe) { p.Timeout = model.Duration(200 * time.Millisecond) },
			want: probe.ClientTimeout, reason: probe.ReasonTimeout, status: 200, errRE: `probe timeout`, absent: []string{probe.PhaseFirstToken, probe.PhaseDecode}},
		{name: "slow headers time out", handler: func(_ http.ResponseWriter, r *http.Request) { waitGone(r) },
			edit: func(_ *Options, p *config.Probe) { p.Timeout = model.Duration(200 * time.Millisecond) },
			want: probe.ClientTimeout, reason: probe.ReasonTimeout, errRE: `probe timeout`, absent: []string{probe.PhaseHeaders, probe.PhaseFirstToken}},
		{name: "wrong model", handler: streamHandler([]string{strings.ReplaceAll(chatOK[1], `"m"`, `"x"`), chatOK[3]}),
			want: probe.QualityFailure, reason: probe.ReasonQuality, status: 200},
		{name: "no usage", handler: streamHandler([]string{`{"model":"m","choices":[{"delta":{"content":"144"},"finish_reason":"stop"}]}`}),
			want: probe.Accepted, status: 200, wantFlags: []string{flagNoUsage}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := serve(t, tc.handler)
			o, p := Options{}, rqProbe(config.APIChat)
			if tc.edit != nil {
				tc.edit(&o, &p)
			}
			res := doRequest(context.Background(), newTestRequester(t, rqTarget(url), p, o), 1)
			if res.Disposition != tc.want || res.Reason != tc.reason || res.HTTPStatus != tc.status {
				t.Fatalf("got %s/%s status %d (err %q), want %s/%s status %d", res.Disposition, res.Reason, res.HTTPStatus, res.Error,
					tc.want, tc.reason, tc.status)
			}
			if tc.errRE != "" && !regexp.MustCompile(tc.errRE).MatchString(res.Error) {
				t.Fatalf("error %q does not match %q", res.Error, tc.errRE)
			}
			if tc.errRE == "" && tc.want == probe.Accepted && res.Error != "" {
				t.Fatalf("unexpected error %q", res.Error)
			}
			if !slices.Equal(res.Flags, tc.wantFlags) {
				t.Fatalf("flags = %v, want %v", res.Flags, tc.wantFlags)
			}
			if res.Sent.IsZero() {
				t.Fatal("Sent not set")
			}
			for _, ph := range tc.absent {
				if d, ok := res.Phases[ph]; ok {
					t.Fatalf("phase %s = %v recorded, want absent", ph, d)
				}
			}
		})
	}
}

// resetHandler sends one event and then resets the connection.
func resetHandler(w http.ResponseWriter, _ *http.Request) {
	writeEvents(w, chatOK[:2], false)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// stallHandler sends the role chunk and then nothing until the client goes.
func stallHandler(w http.ResponseWriter, r *http.Request) {
	writeEvents(w, chatOK[:1], false)
	w.(http.Flusher).Flush()
	waitGone(r)
}

// waitGone waits until the client goes away. The server notices that only
// once the request body has been read.
func waitGone(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

func TestRequesterConnectionErrors(t *testing.T) {
	refused := "http://" + daemontest.FreeAddr(t)
	tlsSrv := httptest.NewUnstartedServer(streamHandler(chatOK))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	tests := []struct {
		name   string
		url    string
		reason string
	}{
		{name: "connection refused", url: refused, reason: probe.ReasonConnect},
		{name: "untrusted certificate", url: tlsSrv.URL, reason: probe.ReasonTLS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := doRequest(context.Background(), newTestRequester(t, rqTarget(tc.url), rqProbe(config.APIChat), Options{}), 1)
			if res.Disposition != probe.ServerFailure || res.Reason != tc.reason {
				t.Fatalf("got %s/%s (%s), want server_failure/%s", res.Disposition, res.Reason, res.Error, tc.reason)
			}
			if strings.Contains(res.Error, "http://") || strings.Contains(res.Error, "https://") {
				t.Fatalf("error repeats the URL: %q", res.Error)
			}
		})
	}
}

func TestClassifyDNSError(t *testing.T) {
	res := &probe.Result{}
	err := fmt.Errorf("post: %w", &net.DNSError{Err: "no such host", Name: "vllm.invalid", IsNotFound: true})
	classifyTransportError(context.Background(), res, err, &phaseTrace{now: time.Now})
	if res.Disposition != probe.ServerFailure || res.Reason != probe.ReasonDNS {
		t.Fatalf("got %s/%s, want server_failure/dns", res.Disposition, res.Reason)
	}
}

func TestRequesterCancellation(t *testing.T) {
	url := serve(t, http.HandlerFunc(stallHandler))
	r := newTestRequester(t, rqTarget(url), rqProbe(config.APIChat), Options{})
	tests := []struct {
		name   string
		cause  error
		want   probe.Disposition
		reason string
	}{
		{name: "shutdown", cause: probe.ErrShutdown, want: probe.Cancelled, reason: probe.ReasonShutdown},
		{name: "removed", cause: probe.ErrRemoved, want: probe.Cancelled, reason: probe.ReasonRemoved},
		{name: "caller deadline", cause: context.DeadlineExceeded, want: probe.ClientTimeout, reason: probe.ReasonTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(100*time.Millisecond, func() { cancel(tc.cause) })
			start := time.Now()
			res := doRequest(ctx, r, 1)
			if res.Disposition != tc.want || res.Reason != tc.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", res.Disposition, res.Reason, res.Error, tc.want, tc.reason)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("Do returned after %v, want soon after cancellation", d)
			}
		})
	}
	t.Run("already cancelled before discovery", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(probe.ErrShutdown)
		res := doRequest(ctx, r, 1)
		if res.Disposition != probe.Cancelled || res.Reason != probe.ReasonShutdown || !res.Sent.IsZero() {
			t.Fatalf("got %s/%s sent %v, want cancelled/shutdown never sent", res.Disposition, res.Reason, res.Sent)
		}
	})
}

func TestLimitedBody(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		max     int64
		wantErr error
	}{
		{name: "under", body: "abc", max: 4, wantErr: nil},
		{name: "exact", body: "abcd", max: 4, wantErr: nil},
		{name: "over", body: "abcde", max: 4, wantErr: errBodyTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := io.ReadAll(&limitedBody{r: strings.NewReader(tc.body), n: tc.max})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && string(b) != tc.body {
				t.Fatalf("body = %q", b)
			}
		})
	}
}
