package dashboards

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/designdoc"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// knownMetrics: the metric names of docs/design.md and vLLM's own series
// (as the simulator serves them) with histogram suffixes, the recording
// rules `rules` generates and Prometheus' own ALERTS.
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{"ALERTS": true}
	design, err := designdoc.MetricNames("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(design, vllmMetrics(t)...) {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			known[n+suffix] = true
		}
	}
	cfg := &config.Config{
		Targets: []config.Target{{Name: "t"}},
		Probes:  []config.Probe{{Name: "p", Rate: 1, Objective: 0.99, SLO: config.SLO{TTFT: model.Duration(time.Second)}}},
	}
	rf, _, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for r := range rf.Rules() {
		if r.Record != "" {
			known[r.Record] = true
		}
	}
	return known
}

// vllmMetrics returns the names of vLLM's own series, as the simulator
// (which speaks vLLM's metric names) registers them.
func vllmMetrics(t *testing.T) []string {
	t.Helper()
	sim, err := simulator.New(simulator.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	fams, err := sim.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "vllm:") {
			names = append(names, f.GetName())
		}
	}
	if len(names) == 0 {
		t.Fatal("the simulator registers no vllm:* series")
	}
	return names
}

type jsonPanel struct {
	ID         int              `json:"id"`
	Type       string           `json:"type"`
	Title      string           `json:"title"`
	Datasource *jsonDatasource  `json:"datasource"`
	GridPos    *json.RawMessage `json:"gridPos"`
	Panels     []jsonPanel      `json:"panels"`
	Targets    []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource *jsonDatasource `json:"datasource"`
	} `json:"targets"`
}

type jsonDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type jsonDashboard struct {
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []jsonPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      any             `json:"query"`
			Datasource *jsonDatasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

func flatten(ps []jsonPanel) []jsonPanel {
	var out []jsonPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flatten(p.Panels)...)
	}
	return out
}

func checkDatasource(t *testing.T, where string, ds *jsonDatasource) {
	t.Helper()
	if ds == nil || ds.Type != "prometheus" || ds.UID != "${datasource}" {
		t.Errorf("%s: datasource %+v, want the ${datasource} variable", where, ds)
	}
}

func TestDashboardStructure(t *testing.T) {
	all := All()
	if len(all) != 2 {
		t.Fatalf("%d dashboards embedded, want overview and latency", len(all))
	}
	uids := map[string]bool{}
	for _, d := range all {
		t.Run(d.Name, func(t *testing.T) {
			var dj jsonDashboard
			if err := json.Unmarshal(d.JSON, &dj); err != nil {
				t.Fatal(err)
			}
			if dj.SchemaVersion < 39 || dj.UID == "" || dj.Title == "" || uids[dj.UID] {
				t.Errorf("schemaVersion %d, uid %q (duplicate %v), title %q", dj.SchemaVersion, dj.UID, uids[dj.UID], dj.Title)
			}
			uids[dj.UID] = true
			vars := map[string]string{}
			for _, v := range dj.Templating.List {
				vars[v.Name] = v.Type
				if v.Type == "query" {
					checkDatasource(t, "variable "+v.Name, v.Datasource)
				}
				if v.Type == "datasource" && v.Query != "prometheus" {
					t.Errorf("datasource variable query %v, want prometheus", v.Query)
				}
			}
			if vars["datasource"] != "datasource" || vars["target"] != "query" || vars["probe"] != "query" {
				t.Errorf("template variables %v, want datasource, target and probe", vars)
			}
			ids := map[int]bool{}
			for _, p := range flatten(dj.Panels) {
				where := p.Title
				if ids[p.ID] || p.ID == 0 || p.GridPos == nil {
					t.Errorf("panel %q: id %d (duplicate or zero) or no gridPos", where, p.ID)
				}
				ids[p.ID] = true
				if p.Type == "row" {
					continue
				}
				checkDatasource(t, where, p.Datasource)
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no targets", where)
				}
				for _, tg := range p.Targets {
					checkDatasource(t, where+" "+tg.RefID, tg.Datasource)
					if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" {
						t.Errorf("panel %q target %q has no expr", where, tg.RefID)
					}
				}
			}
			if strings.Contains(string(d.JSON), `"uid": "P`) {
				t.Errorf("hard-coded datasource uid")
			}
		})
	}
}

func TestDashboardMetricsExist(t *testing.T) {
	known := knownMetrics(t)
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 30 {
		t.Fatalf("only %d queries", len(qs))
	}
	for _, q := range qs {
		t.Run(q.Dashboard+"/"+q.Panel+"/"+q.RefID, func(t *testing.T) {
			names := MetricNames(q.Expr)
			if len(names) == 0 {
				t.Errorf("no metric in %s", q.Expr)
			}
			for _, n := range names {
				if !known[n] {
					t.Errorf("unknown metric %q in %s", n, q.Expr)
				}
			}
			if !strings.Contains(q.Expr, "$target") && strings.Contains(q.Expr, "vllm_probe_") {
				t.Errorf("probe query does not filter by $target: %s", q.Expr)
			}
		})
	}
}

func TestMetricNames(t *testing.T) {
	cases := []struct {
		name, expr, want string
	}{
		{"histogram quantile", `histogram_quantile(0.99, sum by (target, le) (rate(vllm_probe_time_to_first_token_seconds_bucket{target=~"$target"}[$__rate_interval])))`, "vllm_probe_time_to_first_token_seconds_bucket"},
		{"colon names and vector matching", "a:b:rate5m{x=\"y\"}\n/ on (target, probe) group_left () (1 - vllm:e2e_request_latency_seconds_count)", "a:b:rate5m,vllm:e2e_request_latency_seconds_count"},
		{"keywords and numbers", `up == 0 and on () vector(1e-05) unless absent(foo)`, "up,foo"},
		{"strings are not names", `label_replace(bar, "dst", "$1", "src", "(.*)")`, "bar"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(MetricNames(tc.expr), ","); got != tc.want {
				t.Errorf("MetricNames = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		in   string
		want string
	}{
		{"defaults", nil, `rate(x{target=~"$target",probe=~"${probe}"}[$__rate_interval])`, `rate(x{target=~".*",probe=~".*"}[1m])`},
		{"overrides", map[string]string{"target": "llama", "__range": "5m"}, `increase(x{target=~"$target"}[$__range])`, `increase(x{target=~"llama"}[5m])`},
		{"unknown left alone", nil, `x{a="$other"}`, `x{a="$other"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expand(tc.in, tc.vars); got != tc.want {
				t.Errorf("Expand = %s, want %s", got, tc.want)
			}
		})
	}
}
