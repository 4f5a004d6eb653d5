package status

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// templateRows is the table row the page's template wrote before
// pairRows: pairRows must write the same bytes.
const templateRows = `{{range .}}<tr class="pair" data-target="{{.Target}}" data-probe="{{.Probe}}" data-replica="{{.Replica}}">
<td class="l name">{{.Target}}{{with .Replica}} <span class="muted">@&nbsp;{{.}}</span>{{end}}</td><td class="l name"><a href="{{pairHref .Target .Probe .Replica}}">{{.Probe}}</a></td><td>{{.Offered}}</td><td>{{.InFlight}}</td><td>{{.AcceptedSinceStart}}</td>
<td class="l wrap">{{range .NotAccepted}}<span class="bad">{{.Disposition}}&nbsp;{{.Count}}</span> {{else}}–{{end}}</td>
<td>{{rate .Completed}}</td><td>{{rate .Goodput}}</td><td class="{{if and (ge .Acceptance 0.0) (lt .Acceptance .Objective)}}bad{{else}}ok{{end}}">{{pct .Acceptance}}</td><td>{{pct .Objective}}</td>
<td>{{msn .TTFTP50}}</td><td>{{msn .TTFTP99}}</td><td>{{msn .ITLP50}}</td><td>{{msn .ITLP99}}</td><td>{{msn .TTFAP99}}</td></tr>
{{end}}`

// TestPairRowsAsTemplate: the rows written in Go are the template's,
// byte for byte, for plain names, names that need escaping (not '+',
// which html/template writes as &#43; and html.EscapeString keeps: the
// same character to a browser), replica pairs, unmeasured values and
// failing acceptance.
func TestPairRowsAsTemplate(t *testing.T) {
	tmpl := template.Must(template.New("rows").Funcs(template.FuncMap{
		"msn": formatMsNumber, "pct": FormatPct, "rate": formatRate,
		"pairHref": func(target, probe, replica string) string { return "pair?" + pairQuery(target, probe, replica) },
	}).Parse(templateRows))
	pairs := []PairStats{
		{Target: "llama-70b", Probe: "chat", Objective: 0.99, Acceptance: -1},
		{Target: `a<b>&"c'`, Probe: "p/q:r", Replica: "10.0.0.1:8000", Offered: 12, InFlight: 1, AcceptedSinceStart: 9,
			Dispositions: map[probe.Disposition]uint64{probe.Accepted: 9, probe.ServerFailure: 2, probe.Cancelled: 1},
			Completed:    0.0333, Goodput: 0.03, Acceptance: 0.75, Objective: 0.99,
			TTFTP50: 120 * time.Millisecond, TTFTP99: 1500 * time.Millisecond, ITLP50: 20 * time.Millisecond, ITLP99: 35 * time.Millisecond},
		{Target: "t", Probe: "ok", Acceptance: 1, Objective: 0.99, TTFAP99: 3 * time.Second},
	}
	var want strings.Builder
	if err := tmpl.Execute(&want, pairs); err != nil {
		t.Fatal(err)
	}
	if got := string(pairRows(pairs)); got != want.String() {
		t.Errorf("rows differ from the template's:\n got %s\nwant %s", got, want.String())
	}
}

// BenchmarkRenderManyPairs renders the status page of 1,000 pairs (no
// charts past MaxChartPairs), each with 15 requests in the window
// (docs/BENCHMARKS.md, "1,000 pairs").
func BenchmarkRenderManyPairs(b *testing.B) {
	clock := &fakeNow{t: time.Unix(1_800_000_000, 0)}
	tr := NewTracker(TrackerOptions{Now: clock.now})
	var probes []string
	for i := range 1000 {
		probes = append(probes, fmt.Sprintf("chat-%03d", i))
	}
	syncPairs(tr, trackerConfig(probes...))
	for range 15 {
		clock.t = clock.t.Add(20 * time.Second)
		for _, p := range probes {
			tr.Offered(config.PairKey{Target: "t", Probe: p})
			tr.Finished(&probe.Result{Target: "t", Probe: p, Disposition: probe.Accepted, TTFT: 100 * time.Millisecond, ITLs: make([]time.Duration, 15)})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Render(io.Discard, Page{Now: clock.t, Window: tr.Window(), Pairs: tr.Snapshot()}); err != nil {
			b.Fatal(err)
		}
	}
}
