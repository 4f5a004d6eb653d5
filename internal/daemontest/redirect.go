package daemontest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Redirects is a pair of loopback servers for redirect tests. Origin
// answers its From path with a redirect to its own Final path, or, while
// ToOther is set, to Final on Elsewhere, a server on another port that
// counts its requests and those carrying an Authorization header.
type Redirects struct {
	Origin, Elsewhere *httptest.Server
	ToOther           atomic.Bool
	elsewhereHits     atomic.Int32
	leaked            atomic.Int32
}

// StartRedirects starts the two servers: both serve final with serve, the
// origin redirects from with status code, other paths are not found. They
// close when the test ends.
func StartRedirects(t testing.TB, from, final string, code int, serve http.HandlerFunc) *Redirects {
	t.Helper()
	r := &Redirects{}
	r.Elsewhere = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.elsewhereHits.Add(1)
		if req.Header.Get("Authorization") != "" {
			r.leaked.Add(1)
		}
		serve(w, req)
	}))
	t.Cleanup(r.Elsewhere.Close)
	r.Origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.URL.Path == final:
			serve(w, req)
		case req.URL.Path != from:
			http.NotFound(w, req)
		case r.ToOther.Load():
			http.Redirect(w, req, r.Elsewhere.URL+final, code)
		default:
			http.Redirect(w, req, final, code)
		}
	}))
	t.Cleanup(r.Origin.Close)
	return r
}

// CheckElsewhereUntouched fails the test when the other port got any
// request: a redirect to another origin must not be followed, and
// credentials must never leave the target's origin.
func (r *Redirects) CheckElsewhereUntouched(t testing.TB) {
	t.Helper()
	if n, l := r.elsewhereHits.Load(), r.leaked.Load(); n != 0 || l != 0 {
		t.Errorf("the other port got %d requests, %d with Authorization", n, l)
	}
}
