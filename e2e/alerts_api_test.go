//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// amAlert is one alert of an Alertmanager webhook notification.
type amAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Fingerprint string            `json:"fingerprint"`
}

// notification is one webhook call Alertmanager made.
type notification struct {
	At       time.Time
	Path     string    // /page, /ticket or /default: the route's receiver
	Receiver string    `json:"receiver"`
	Status   string    `json:"status"`
	Alerts   []amAlert `json:"alerts"`
}

// webhook is the test's Alertmanager receiver.
type webhook struct {
	url string
	mu  sync.Mutex
	got []notification
	bad []string // undecodable bodies
}

func newWebhook(t *testing.T) *webhook {
	t.Helper()
	w := &webhook{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := notification{At: time.Now(), Path: r.URL.Path}
		err := json.Unmarshal(body, &n)
		w.mu.Lock()
		if err != nil {
			w.bad = append(w.bad, string(body))
		} else {
			w.got = append(w.got, n)
		}
		w.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	return w
}

func (w *webhook) notifications() []notification {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]notification(nil), w.got...)
}

// matches reports whether every label of want has that value in labels.
func matches(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// firing returns the alerts matching want that some notification on path
// reported firing, by fingerprint.
func (w *webhook) firing(path string, want map[string]string) map[string]amAlert {
	out := map[string]amAlert{}
	for _, n := range w.notifications() {
		for _, a := range n.Alerts {
			if n.Path == path && a.Status == "firing" && matches(a.Labels, want) {
				out[a.Fingerprint] = a
			}
		}
	}
	return out
}

// lastStatus returns the status of the alert with fingerprint fp in the
// latest notification that carried it.
func (w *webhook) lastStatus(fp string) string {
	status := ""
	for _, n := range w.notifications() {
		for _, a := range n.Alerts {
			if a.Fingerprint == fp {
				status = a.Status
			}
		}
	}
	return status
}

// summary lists every notification for diagnostics.
func (w *webhook) summary() string {
	var b strings.Builder
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.got {
		fmt.Fprintf(&b, "%s %s receiver=%s status=%s\n", n.At.Format("15:04:05.000"), n.Path, n.Receiver, n.Status)
		for _, a := range n.Alerts {
			fmt.Fprintf(&b, "    %s %s\n", a.Status, labelString(a.Labels))
		}
	}
	for _, body := range w.bad {
		fmt.Fprintf(&b, "undecodable notification: %s\n", body)
	}
	if b.Len() == 0 {
		return "(none)\n"
	}
	return b.String()
}

func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// promAlert is one entry of Prometheus's /api/v1/alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
	Value  string            `json:"value"`
}

// promRule is one rule of /api/v1/rules.
type promRule struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
	State     string `json:"state"`
	Query     string `json:"query"`
}

// promSample is one element of an instant query result vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// promGet calls a Prometheus API path and decodes its data into v; a
// non-success answer is returned as an error.
func promGet(p *toolProc, path string, params url.Values, v any) error {
	u := p.url(path)
	if params != nil {
		u += "?" + params.Encode()
	}
	resp, err := http.Get(u)
	if err != nil {
		return fmt.Errorf("get %s: %w", path, err)
	}
	defer resp.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s (HTTP %d)", path, env.Error, resp.StatusCode)
	}
	return json.Unmarshal(env.Data, v)
}

// query runs an instant query and returns its vector (or a scalar as one
// sample without labels).
func query(p *toolProc, expr string) ([]promSample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := promGet(p, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "vector":
		var v []promSample
		err := json.Unmarshal(data.Result, &v)
		return v, err
	case "scalar":
		var s [2]any
		err := json.Unmarshal(data.Result, &s)
		return []promSample{{Value: s}}, err
	}
	return nil, fmt.Errorf("query %q: unexpected result type %s", expr, data.ResultType)
}

func promAlerts(p *toolProc) ([]promAlert, error) {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	err := promGet(p, "/api/v1/alerts", nil, &data)
	return data.Alerts, err
}

func promRules(p *toolProc) ([]promRule, error) {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := promGet(p, "/api/v1/rules", nil, &data); err != nil {
		return nil, err
	}
	var out []promRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// diagnostics describes the stack's state for a failure message.
func (s *alertStack) diagnostics() string {
	var b strings.Builder
	b.WriteString("== Prometheus /api/v1/alerts\n")
	alerts, err := promAlerts(s.prom)
	if err != nil {
		fmt.Fprintln(&b, err)
	}
	for _, a := range alerts {
		fmt.Fprintf(&b, "%s value=%s %s\n", a.State, a.Value, labelString(a.Labels))
	}
	b.WriteString("== rules not ok or not inactive\n")
	rs, err := promRules(s.prom)
	if err != nil {
		fmt.Fprintln(&b, err)
	}
	for _, r := range rs {
		if r.Health != "ok" || (r.State != "" && r.State != "inactive") {
			fmt.Fprintf(&b, "%s %s health=%s state=%s err=%s\n", r.Type, r.Name, r.Health, r.State, r.LastError)
		}
	}
	b.WriteString("== key series\n")
	for _, q := range []string{
		`up`, `sum by (disposition) (rate(vllm_probe_requests_total[10s]))`,
		`target_probe:vllm_probe_acceptance:ratio_rate5s`, `target_probe:vllm_probe_acceptance:ratio_rate1m`,
		`histogram_quantile(0.99, sum by (le) (rate(vllm_probe_time_to_first_token_seconds_bucket[30s])))`,
		// Over the whole run: a stall of the machine shows as failures,
		// schedule lag and slow scrapes at the same time.
		`sum by (disposition) (increase(vllm_probe_requests_total[10m]))`,
		`sum by (reason) (increase(vllm_probe_failures_total[10m]))`,
		`histogram_quantile(0.99, sum by (le) (rate(vllm_probe_schedule_lag_seconds_bucket[10m])))`,
		`max_over_time(scrape_duration_seconds[10m])`,
		`max_over_time(vllm_probe_requests_in_flight[10m])`,
	} {
		v, err := query(s.prom, q)
		fmt.Fprintf(&b, "%s => %v %v\n", q, v, err)
	}
	b.WriteString("== webhook notifications\n" + s.webhook.summary())
	b.WriteString("== prober logs\n" + tailString(s.prober.Logs(), 4000))
	b.WriteString("== prometheus logs\n" + s.prom.logs.Tail(3000))
	b.WriteString("== alertmanager logs\n" + s.am.logs.Tail(3000))
	return b.String()
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}
