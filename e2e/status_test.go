//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// secretToken is a recognisable credential that must never be shown.
const secretToken = "sk-e2e-SECRET-5f1c9a7d"

// chromiumArgs are the flags of every headless Chromium run: a 1280 px
// wide window (the width the pages must fit) and console messages on
// stderr.
func chromiumArgs(t *testing.T, height int) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--enable-logging=stderr", "--v=0",
		"--user-data-dir=" + t.TempDir(), fmt.Sprintf("--window-size=1280,%d", height)}
}

// chromiumDOM loads url in headless Chromium and returns the rendered DOM;
// when shot is not empty it also saves a screenshot there. It fails the
// test on any message the page wrote to the console (an error, a refused
// resource, a script).
func chromiumDOM(t *testing.T, url, shot string) string {
	t.Helper()
	bin := daemontest.RequireTool(t, "chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, bin, append(chromiumArgs(t, 900), "--virtual-time-budget=3000", "--dump-dom", url)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("console message loading %s: %s", url, line)
		}
	}
	if shot != "" {
		if b, err := exec.CommandContext(ctx, bin, append(chromiumArgs(t, 900), "--screenshot="+shot, url)...).CombinedOutput(); err != nil {
			t.Fatalf("chromium --screenshot: %v\n%s", err, b)
		}
	}
	return string(out)
}

// layoutProbe is a page served beside the prober's pages (same origin,
// through a proxy) that loads one of them in a 1280 px frame and writes
// what a reader sees into its own DOM: how wide the page is against the
// frame, where its widest table ends, and how many drawn chart lines and
// bars it has.
const layoutProbe = `<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="%s" style="width:1280px;height:900px;border:0"></iframe>
<script>
document.getElementById("f").addEventListener("load", function () {
  var doc = this.contentDocument, el = doc.documentElement;
  var lines = 0;
  doc.querySelectorAll("svg.chart path.series").forEach(function (p) {
    if (p.getTotalLength() > 0) { lines++; }
  });
  var table = 0;
  doc.querySelectorAll("table").forEach(function (e) { table = Math.max(table, e.getBoundingClientRect().right); });
  var out = document.createElement("pre");
  out.id = "layout";
  out.textContent = "scrollWidth=" + el.scrollWidth + " clientWidth=" + el.clientWidth +
    " lines=" + lines + " dots=" + doc.querySelectorAll("svg.chart circle.dot").length +
    " bars=" + doc.querySelectorAll("svg.bar rect").length + " tableRight=" + Math.ceil(table);
  document.body.appendChild(out);
});
</script></body></html>`

// pageLayout is what layoutProbe found.
type pageLayout struct{ scrollWidth, clientWidth, lines, dots, bars, tableRight int }

// layoutOf loads path of the prober at base in layoutProbe in Chromium.
func layoutOf(t *testing.T, base, path string) pageLayout {
	t.Helper()
	target, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/layout-probe" {
			fmt.Fprintf(w, layoutProbe, html.EscapeString(path))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dom := chromiumDOM(t, srv.URL+"/layout-probe", "")
	m := regexp.MustCompile(`scrollWidth=(\d+) clientWidth=(\d+) lines=(\d+) dots=(\d+) bars=(\d+) tableRight=(\d+)`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the layout probe of %s reported nothing:\n%.2000s", path, dom)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	return pageLayout{n(1), n(2), n(3), n(4), n(5), n(6)}
}

func TestStatusPageInChromium(t *testing.T) {
	o := simulator.DefaultOptions()
	o.APIKey = secretToken
	_, simURL := simtest.Start(t, o)
	dir := t.TempDir()
	keyFile := testfile.Write(t, dir, "api-key", secretToken)
	cfg := fmt.Sprintf(`targets:
  - name: secured
    url: %s
    http_client_config:
      authorization: {type: Bearer, credentials_file: %s}
probes:
  - name: chat-arith
    api: chat
    rate: 5
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
          expect: {regex: '\b144\b'}
  - name: completions-random
    api: completions
    rate: 5
    workload: {random: {input_tokens: 32, output_tokens: 8}}
`, simURL, keyFile)
	cfgPath := testfile.Write(t, dir, "c.yml", cfg)
	d := daemontest.Start(t, binary, "--config.file="+cfgPath, "--log.level=debug")
	daemontest.WaitFor(t, 20*time.Second, "accepted requests on the status page", func() bool {
		_, body := daemontest.Do(t, http.MethodGet, d.URL("/api/v1/results?limit=5"))
		return strings.Contains(body, `"disposition":"accepted"`)
	})

	shot := os.Getenv("STATUS_SCREENSHOT") // set to keep a screenshot for review
	dom := chromiumDOM(t, d.URL("/"), shot)
	for _, want := range []string{"vllm-prober", `data-target="secured"`, `data-probe="chat-arith"`, `data-probe="completions-random"`, "goodput", "completed (req/s)", "in flight", "offered − abandoned", "TTFT p99", "Last failures"} {
		if !strings.Contains(dom, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	pair := chromiumDOM(t, d.URL("/pair?target=secured&probe=chat-arith"), "")
	for _, want := range []string{"secured / chat-arith", `class="series"`, "Recent requests", "first_token"} {
		if !strings.Contains(pair, want) {
			t.Errorf("pair page lacks %q", want)
		}
	}
	for name, body := range map[string]string{
		"status page": dom,
		"pair page":   pair,
		"metrics":     get(t, d.URL("/metrics")),
		"results":     get(t, d.URL("/api/v1/results?limit=1000")),
		"logs":        d.Logs(),
	} {
		if strings.Contains(body, secretToken) {
			t.Errorf("%s shows the secret token", name)
		}
	}
}

// TestPairPageAnswerColumnsInChromium: against a reasoning simulator, the
// pair pages of a reasoning probe and of a forced tool call show, for
// every recent request Chromium renders, the TTFA, reasoning tokens and
// tool calls of that request's ledger record.
func TestPairPageAnswerColumnsInChromium(t *testing.T) {
	o := simulator.DefaultOptions()
	o.ReasoningTokens = 8
	_, simURL := simtest.Start(t, o)
	cfgPath := testfile.Temp(t, "c.yml", fmt.Sprintf(`targets:
  - {name: sim, url: %s}
probes:
  - name: reasoning
    api: chat
    rate: 5
    request: {max_tokens: 32}
    workload: {prompts: [{messages: [{role: user, content: "What is 12*12?"}]}]}
  - name: tools
    api: chat
    rate: 5
    request:
      max_tokens: 64
      extra:
        tools: [{type: function, function: {name: get_weather, parameters: {type: object, properties: {city: {type: string}}, required: [city]}}}]
        tool_choice: required
    workload: {prompts: [{messages: [{role: user, content: "What is the weather in Paris?"}]}]}
`, simURL))
	d := daemontest.Start(t, binary, "--config.file="+cfgPath)
	type record struct {
		Probe           string
		Scheduled       time.Time
		TTFAS           *float64 `json:"ttfa_s"`
		ReasoningTokens int      `json:"reasoning_tokens"`
		ToolCalls       int      `json:"tool_calls"`
	}
	results := func() []record {
		var res struct{ Data []record }
		if err := json.Unmarshal([]byte(get(t, d.URL("/api/v1/results?limit=1000"))), &res); err != nil {
			t.Fatalf("results: %v", err)
		}
		return res.Data
	}
	daemontest.WaitFor(t, 30*time.Second, "reasoning and tool calls in the results", func() bool {
		var reasoning, tools bool
		for _, r := range results() {
			reasoning = reasoning || r.Probe == "reasoning" && r.ReasoningTokens > 0 && r.TTFAS != nil
			tools = tools || r.Probe == "tools" && r.ToolCalls > 0
		}
		return reasoning && tools
	})
	row := regexp.MustCompile(`<tr><td class="l">([0-9:.]+)</td>[\s\S]*?<td class="ttfa">([^<]*)</td>[\s\S]*?<td class="reasoning">([^<]*)</td><td class="l tools">([^<]*)</td></tr>`)
	for _, p := range []string{"reasoning", "tools"} {
		rows := row.FindAllStringSubmatch(chromiumDOM(t, d.URL("/pair?target=sim&probe="+p), ""), -1)
		byTime := map[string][]record{} // fetched after the page: a superset of its rows
		for _, r := range results() {
			if r.Probe == p {
				k := r.Scheduled.UTC().Format("15:04:05.000")
				byTime[k] = append(byTime[k], r)
			}
		}
		var reasoning, tools int
		for _, m := range rows {
			recs := byTime[m[1]]
			if len(recs) != 1 {
				t.Fatalf("%s: row scheduled %s has %d ledger records, want 1", p, m[1], len(recs))
			}
			r := recs[0]
			if r.TTFAS == nil {
				if m[2] != "–" {
					t.Errorf("%s %s: TTFA %q, the record has none", p, m[1], m[2])
				}
			} else if ms, err := strconv.ParseFloat(strings.TrimSuffix(m[2], " ms"), 64); err != nil || math.Abs(ms-*r.TTFAS*1000) > 0.051 {
				t.Errorf("%s %s: TTFA %q, the record's is %.4f ms", p, m[1], m[2], *r.TTFAS*1000)
			}
			wantReasoning, wantTools := "–", "–"
			if r.ReasoningTokens > 0 {
				reasoning++
				wantReasoning = strconv.Itoa(r.ReasoningTokens)
			}
			if r.ToolCalls > 0 {
				tools++
				wantTools = strconv.Itoa(r.ToolCalls) + " (get_weather)"
			}
			if m[3] != wantReasoning || m[4] != wantTools {
				t.Errorf("%s %s: reasoning tokens %q and tool calls %q, want %q and %q", p, m[1], m[3], m[4], wantReasoning, wantTools)
			}
		}
		if len(rows) == 0 || p == "reasoning" && reasoning == 0 || p == "tools" && tools == 0 {
			t.Errorf("%s: %d recent rows, %d with reasoning, %d with tool calls", p, len(rows), reasoning, tools)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	_, body := daemontest.Do(t, http.MethodGet, url)
	return body
}

// TestStatusPageFitsWith50Pairs runs 50 pairs, 2 targets with 25 probes
// each with long names and failures, and checks in Chromium at 1280 px
// that the status and detail pages draw their charts, scroll no wider
// than the window, log nothing to the console, and that the status page
// stays bounded in size.
func TestStatusPageFitsWith50Pairs(t *testing.T) {
	o := simulator.DefaultOptions()
	o.Faults = simulator.Faults{HTTP500: 0.1}
	_, simURL := simtest.Start(t, o)
	var cfg strings.Builder
	cfg.WriteString("targets:\n")
	for _, tg := range []string{"inference-gateway-europe-west4-primary", "inference-gateway-us-central1-secondary"} {
		fmt.Fprintf(&cfg, "  - {name: %s, url: %s}\n", tg, simURL)
	}
	cfg.WriteString("probes:\n")
	for i := range 25 {
		fmt.Fprintf(&cfg, "  - {name: chat-long-context-summarisation-%02d, api: chat, rate: 0.5, slo: {ttft: 500ms, tpot: 50ms}, workload: {random: {input_tokens: 16, output_tokens: 4}}}\n", i)
	}
	cfgPath := testfile.Temp(t, "c.yml", cfg.String())
	d := daemontest.Start(t, binary, "--config.file="+cfgPath)
	// Every pair's charts have a point once it has an accepted request (a
	// failed one has no TTFT): wait for that per pair, not for a count of
	// drawn series over all pairs, which a few pairs with an SLO line
	// reach while another has drawn nothing yet.
	daemontest.WaitFor(t, 60*time.Second, "an accepted request of every pair", func() bool {
		var res struct {
			Data []struct{ Target, Probe, Disposition string }
		}
		if err := json.Unmarshal([]byte(get(t, d.URL("/api/v1/results?limit=1000"))), &res); err != nil {
			t.Fatalf("results: %v", err)
		}
		accepted := map[[2]string]bool{}
		for _, r := range res.Data {
			if r.Disposition == "accepted" {
				accepted[[2]string{r.Target, r.Probe}] = true
			}
		}
		return len(accepted) == 50
	})
	page := get(t, d.URL("/"))
	if n := strings.Count(page, `<path class="series" d="M`); n < 50*3 {
		t.Errorf("status page draws %d series, want at least 3 per pair (TTFT p50, p99, goodput)", n)
	}
	const maxBytes = 600 << 10
	t.Logf("status page of 50 pairs: %d bytes", len(page))
	if len(page) > maxBytes {
		t.Errorf("status page of 50 pairs is %d bytes, want at most %d", len(page), maxBytes)
	}
	for _, c := range []struct {
		path       string
		minDrawn   int
		minSegment int
	}{
		{"/", 50 * 3, 50},
		{"/pair?target=inference-gateway-us-central1-secondary&probe=chat-long-context-summarisation-24", 3, 1},
	} {
		t.Run(c.path, func(t *testing.T) {
			l := layoutOf(t, d.URL(""), c.path)
			t.Logf("%+v", l)
			if l.scrollWidth > l.clientWidth {
				t.Errorf("page is %d px wide in a %d px window: it scrolls sideways", l.scrollWidth, l.clientWidth)
			}
			// A pair's first minute is one point per series: a dot until
			// the next minute draws a line.
			if l.lines+l.dots < c.minDrawn {
				t.Errorf("%d chart lines and %d dots drawn, want at least %d", l.lines, l.dots, c.minDrawn)
			}
			if l.bars < c.minSegment {
				t.Errorf("%d disposition bar segments, want at least %d", l.bars, c.minSegment)
			}
		})
	}
}
