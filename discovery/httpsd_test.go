package discovery

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/internal/httpclient"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// sdServer is an http_sd endpoint that wants a bearer token and answers
// what its fields say.
type sdServer struct {
	mu          sync.Mutex
	status      int
	contentType string
	body        string
	requests    []*http.Request
}

func (s *sdServer) answer(status int, contentType, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.contentType, s.body = status, contentType, body
}

func (s *sdServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	if r.Header.Get("Authorization") != "Bearer s3cret" {
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", s.contentType)
	w.WriteHeader(s.status)
	_, _ = w.Write([]byte(s.body))
}

// startSD serves an sdServer and returns it with a discovery config that
// reads its token from a file, as configurations do.
func startSD(t *testing.T, refresh time.Duration) (*sdServer, *httptest.Server, HTTPSDConfig) {
	t.Helper()
	sd := &sdServer{status: http.StatusOK, contentType: "application/json", body: "[]"}
	ts := httptest.NewServer(sd)
	t.Cleanup(ts.Close)
	token := testfile.Temp(t, "token", "s3cret\n")
	c := HTTPSDConfig{
		URL:              ts.URL + "/sd?key=abc",
		Refresh:          model.Duration(refresh),
		HTTPClientConfig: promconfig.HTTPClientConfig{Authorization: &promconfig.Authorization{Type: "Bearer", CredentialsFile: token}},
	}
	return sd, ts, c
}

// TestHTTPSDChanges checks the request, a set and its changes, and that a
// failed fetch keeps the last set.
func TestHTTPSDChanges(t *testing.T) {
	sd, ts, c := startSD(t, 50*time.Millisecond)
	sd.answer(http.StatusOK, "application/json; charset=utf-8",
		`[{"targets": ["10.0.0.2:8000", "10.0.0.1:8000"], "labels": {"pool": "a"}}]`)
	d, err := New(Config{HTTPSD: &c}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := start(t, d)
	a := []Replica{
		{Addr: "10.0.0.1:8000", Labels: map[string]string{"pool": "a"}},
		{Addr: "10.0.0.2:8000", Labels: map[string]string{"pool": "a"}},
	}
	run.wantUpdate(a, false)

	sd.answer(http.StatusInternalServerError, "text/plain", "oops")
	run.wantFail("http_sd: GET " + ts.URL + "/sd?key=xxxxx: status 500 Internal Server Error, want 200")
	sd.answer(http.StatusOK, "application/json", `[{"targets": ["10.0.0.2:8000", "10.0.0.1:8000"], "labels": {"pool": "a"}}]`)
	time.Sleep(200 * time.Millisecond) // the same set again: no update
	sd.answer(http.StatusOK, "application/json", `[{"targets": ["10.0.0.1:8000"], "labels": {"pool": "a"}}, {"targets": ["10.0.0.3:8000"]}]`)
	run.wantUpdate([]Replica{a[0], {Addr: "10.0.0.3:8000"}}, true)
	run.stop()

	sd.mu.Lock()
	defer sd.mu.Unlock()
	r := sd.requests[0]
	if r.Method != http.MethodGet || r.URL.RequestURI() != "/sd?key=abc" || r.Header.Get("User-Agent") != httpclient.UserAgent() ||
		r.Header.Get("Accept") != "application/json" || r.Header.Get("X-Prometheus-Refresh-Interval-Seconds") != "0.05" {
		t.Errorf("request %s %s, headers %v", r.Method, r.URL, r.Header)
	}
}

func TestHTTPSDFailures(t *testing.T) {
	for _, tc := range []struct {
		name              string
		token             bool // send the token
		status            int
		contentType, body string
		want              string // after "http_sd: GET <url>"
	}{
		{"no token", false, 200, "application/json", "[]", ": status 401 Unauthorized, want 200"},
		{"server error", true, 503, "application/json", "[]", ": status 503 Service Unavailable, want 200"},
		{"redirect not followed", true, 302, "application/json", "[]", ": status 302 Found, want 200"},
		{"not JSON", true, 200, "text/html", "<html>", `: Content-Type "text/html", want application/json`},
		{"bad JSON", true, 200, "application/json", `[{"targets": [1]}]`,
			": body:1: json: cannot unmarshal number into Go struct field targetGroup.targets of type string"},
		{"bad target", true, 200, "application/json", `[{"targets": ["h"]}]`,
			`: body: group 0: target "h": want host:port: missing port in address`},
		{"too large", true, 200, "application/json", "[" + strings.Repeat(" ", maxDocumentSize) + "]", ": body larger than the 16 MiB cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sd, ts, c := startSD(t, time.Hour)
			sd.answer(tc.status, tc.contentType, tc.body)
			if !tc.token {
				c.HTTPClientConfig = promconfig.HTTPClientConfig{}
			}
			d, err := New(Config{HTTPSD: &c}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			e := firstCall(t, d)
			want := "http_sd: GET " + ts.URL + "/sd?key=xxxxx" + tc.want
			if e.err == nil || e.err.Error() != want {
				t.Errorf("got %v\nwant fail(%s)", e, want)
			}
		})
	}
}

// TestHTTPSDTimeout checks that an endpoint slower than the refresh
// interval fails the refresh, and that the error hides the URL's secrets.
func TestHTTPSDTimeout(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) })
	u := strings.Replace(ts.URL, "http://", "http://user:pw@", 1) + "/sd"
	d, err := New(Config{HTTPSD: &HTTPSDConfig{URL: u, Refresh: model.Duration(200 * time.Millisecond)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := firstCall(t, d)
	shown := strings.Replace(ts.URL, "http://", "http://xxxxx@", 1) + "/sd"
	want := `http_sd: Get "` + shown + `": context deadline exceeded (refresh took longer than the 200ms refresh interval)`
	if e.err == nil || e.err.Error() != want {
		t.Errorf("got %v\nwant fail(%s)", e, want)
	}
}
