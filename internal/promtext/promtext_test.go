package promtext

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			_, _ = w.Write([]byte("# TYPE up gauge\nup{job=\"a\"} 1\nup{job=\"b\"} 0\n"))
		case "/bad":
			_, _ = w.Write([]byte("up{job=\"a\" 1\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	fams := Scrape(t, srv.URL+"/metrics")
	if got := len(fams["up"].GetMetric()); got != 2 {
		t.Errorf("up has %d series, want 2", got)
	}
	if v := fams["up"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("up{job=a} = %g, want 1", v)
	}
	for i, want := range []string{"a", "b"} {
		if l := Labels(fams["up"].GetMetric()[i]); len(l) != 1 || l["job"] != want {
			t.Errorf("series %d labels %v, want job=%s", i, l, want)
		}
	}
	for _, tc := range []struct{ path, want string }{
		{"/bad", "parse " + srv.URL + "/bad:"},
		{"/missing", "scrape " + srv.URL + "/missing: status 404 Not Found"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if _, err := Fetch(srv.URL + tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
