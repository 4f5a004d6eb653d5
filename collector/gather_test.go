package collector

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/probe"
)

// TestGatherMatchesRegistry: Gather gives exactly the families and series
// a pedantic registry gathers from Collect (which checks every series),
// for full, lean and native-only pairs, a fingerprinted probe, a replica
// pair and every kind of result; and the pairs' series come in pair order.
func TestGatherMatchesRegistry(t *testing.T) {
	c, keys := everyKindOfPair("10.0.0.1:8000")
	compareWithRegistry(t, c)
	// A stopped pair leaves both, in the middle of the order.
	c.PairStopped(keys[2])
	compareWithRegistry(t, c)
	if n := len(c.order); n != len(keys)-1 {
		t.Errorf("%d pairs in order after one of %d stopped", n, len(keys))
	}
}

// everyKindOfPair returns a collector with full, lean and native-only
// pairs, a fingerprinted probe and a replica pair (replica its host:port),
// each with results of every kind and one request in flight, and the
// pairs' keys, the replica's first.
func everyKindOfPair(replicaAddr string) (*Collector, []config.PairKey) {
	native := false
	cfg := testConfig(map[string][]string{"t1": nil, "t2": nil}, map[string]config.SLO{
		"full": {TTFT: dur("300ms"), TPOT: dur("50ms"), E2EL: dur("5s")},
		"lean": {TTFT: dur("1s")},
		"fp":   {},
	})
	for i, p := range cfg.Probes {
		switch p.Name {
		case "lean":
			cfg.Probes[i].Histograms, cfg.Probes[i].ClassicBuckets = config.LeanHistograms, &native
		case "fp":
			cfg.Probes[i].Fingerprint = &config.Fingerprint{Tokens: 16, Confirm: 3}
		}
	}
	c := New(Options{Now: clock})
	syncPairs(c, cfg)
	replica := config.Pair{Key: config.PairKey{Target: "t1", Probe: "lean", Replica: replicaAddr}, Probe: cfg.Probes[0]}
	for _, p := range cfg.Probes {
		if p.Name == "lean" {
			replica.Probe = p
		}
	}
	c.PairStarted(replica)
	keys := []config.PairKey{replica.Key}
	for _, p := range cfg.Pairs() {
		keys = append(keys, p.Key)
	}
	for i, k := range keys {
		for j, r := range []probe.Result{
			{Disposition: probe.Accepted, RequestID: "r1", TTFT: 120 * time.Millisecond, TPOT: 20 * time.Millisecond, E2EL: time.Second,
				ITLs: []time.Duration{20 * time.Millisecond}, Phases: probe.PhaseTimes{probe.PhaseHeaders: 5 * time.Millisecond},
				Server: &probe.ServerTiming{TTFT: 100 * time.Millisecond, QueueTime: time.Millisecond}, PromptTokens: 10, OutputTokens: 5,
				Fingerprint: &probe.OutputFingerprint{Hash: "b", Changed: true}},
			{Disposition: probe.LatencyFailure, Reason: probe.ReasonLatency, SLOViolations: []string{probe.SLOTTFT}, TTFT: 2 * time.Second},
			{Disposition: probe.QualityFailure, Reason: probe.ReasonQuality, QualityFailures: []string{probe.CheckRegex}},
			{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx},
		} {
			if j > i%4 {
				break
			}
			r.Target, r.Probe, r.Replica, r.Sent, r.Scheduled = k.Target, k.Probe, k.Replica, fixedNow, fixedNow
			c.Offered(k)
			c.Finished(&r)
		}
		c.Offered(k) // one in flight
	}
	return c, keys
}

// exposedFormats are the formats WriteFormat writes: the text format
// (with and without an escaping scheme), OpenMetrics 1.0.0 and 0.0.1, and
// delimited protobuf.
var exposedFormats = []expfmt.Format{
	expfmt.NewFormat(expfmt.TypeTextPlain), expfmt.FmtText + "; escaping=underscores", expfmt.FmtText_1_0_0,
	expfmt.FmtOpenMetrics_1_0_0, expfmt.FmtOpenMetrics_0_0_1, expfmt.FmtProtoDelim,
}

// TestWriteFormatMatchesEncoder: the exposition of a Join in each format
// is byte for byte what expfmt's encoder writes of its Gather, with other
// families before, between and after the collector's, label values that
// need escaping, and a stopped pair; the handler serves it to what
// Prometheus and curl ask for, and goes the generic way for a family
// gathered twice (which promhttp reports) and for a request naming
// families.
func TestWriteFormatMatchesEncoder(t *testing.T) {
	c, keys := everyKindOfPair("a\"b\\c\nd")
	reg := prometheus.NewRegistry()
	for _, name := range []string{"aaa_first", "vllm_probe_m_between", "zzz_last"} {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "A \\ help\nline."}, []string{"l"})
		g.WithLabelValues("v\"").Set(1.5)
		reg.MustRegister(g)
	}
	j := Join(reg, c)
	for _, format := range exposedFormats {
		compareFormat(t, j, format)
	}
	c.PairStopped(keys[2])
	for _, format := range exposedFormats {
		compareFormat(t, j, format)
	}

	srv := httptest.NewServer(MetricsHandler(j, promhttp.HandlerOpts{DisableCompression: true, EnableOpenMetrics: true}))
	defer srv.Close()
	for _, tc := range []struct{ accept, format string }{
		{"", string(expfmt.NewFormat(expfmt.TypeTextPlain)) + "; escaping=underscores"},
		{"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
			string(expfmt.FmtOpenMetrics_1_0_0) + "; escaping=underscores"}, // Prometheus 2
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3",
			string(expfmt.FmtProtoDelim) + "; escaping=underscores"}, // Prometheus with native histograms
	} {
		got, ctype := fetch(t, srv.URL, tc.accept)
		if want := encodeFormat(t, j, expfmt.Format(tc.format)); got != want || ctype != tc.format {
			t.Errorf("handler, Accept %q: Content-Type %q, want %q; body equal %v", tc.accept, ctype, tc.format, got == want)
		}
	}
	if got, _ := fetch(t, srv.URL+"?name[]=zzz_last", ""); !strings.HasPrefix(got, "# HELP zzz_last") || strings.Contains(got, "vllm_probe") {
		t.Errorf("name[]=zzz_last: got %q, want zzz_last alone", got)
	}

	dup := prometheus.NewRegistry()
	dup.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "vllm_probe_requests_in_flight"}))
	var nothing countingWriter
	if err := Join(c, dup).WriteFormat(&nothing, expfmt.NewFormat(expfmt.TypeTextPlain)); err == nil ||
		!strings.Contains(err.Error(), "vllm_probe_requests_in_flight gathered twice") || nothing != 0 {
		t.Errorf("WriteFormat with a family twice: error %v, %d bytes written", err, nothing)
	}
	dupSrv := httptest.NewServer(MetricsHandler(Join(c, dup), promhttp.HandlerOpts{DisableCompression: true}))
	defer dupSrv.Close()
	resp, err := http.Get(dupSrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("a family twice: status %d, want promhttp's 500", resp.StatusCode)
	}
}

// TestWriteFormatRewritesChangedPairs: a scrape encodes again the pairs
// whose series changed since the last (an offer, a finished request,
// a reload's new histograms or fingerprint), and each scrape is still
// byte for byte expfmt's, in every format; an unchanged pair's series
// are the ones kept.
func TestWriteFormatRewritesChangedPairs(t *testing.T) {
	c, keys := everyKindOfPair("10.0.0.1:8000")
	j := Join(c)
	for _, format := range exposedFormats {
		compareFormat(t, j, format)
	}
	unchanged := c.pair(keys[2])
	var kept [numEncodings]*byte
	for e := range numEncodings {
		kept[e] = &unchanged.encoded[e].b[0]
	}
	k := keys[1]
	for _, change := range []func(){
		func() { c.Offered(k) },
		func() {
			c.Finished(&probe.Result{Target: k.Target, Probe: k.Probe, Disposition: probe.Accepted, Sent: fixedNow, Scheduled: fixedNow,
				TTFT: 700 * time.Millisecond, E2EL: 3 * time.Second, OutputTokens: 7})
		},
		func() {
			c.PairStarted(config.Pair{Key: keys[0], Probe: config.Probe{Name: keys[0].Probe, API: config.APIChat}})
		},
		func() {
			c.PairStarted(config.Pair{Key: k, Probe: config.Probe{Name: k.Probe, API: config.APIChat,
				Fingerprint: &config.Fingerprint{Tokens: 16, Confirm: 3}}})
		},
	} {
		change()
		for _, format := range exposedFormats {
			compareFormat(t, j, format)
		}
	}
	for e := range numEncodings {
		if &unchanged.encoded[e].b[0] != kept[e] {
			t.Errorf("encoding %d: an unchanged pair's series were encoded again", e)
		}
	}
}

// TestUnaskedEncodingsAreDropped: the pairs keep their series encoded in
// a format only while scrapes ask for it; one no scrape asked for in
// encodedKeep is dropped by the next scrape.
func TestUnaskedEncodingsAreDropped(t *testing.T) {
	now := fixedNow
	c := New(Options{Now: func() time.Time { return now }})
	syncPairs(c, leanConfig(2, 2))
	j := Join(c)
	scrape := func(format expfmt.Format) {
		t.Helper()
		if err := j.WriteFormat(io.Discard, format); err != nil {
			t.Fatal(err)
		}
	}
	encoded := func() (out []encoding) {
		for e, pe := range c.order[0].encoded {
			if pe.b != nil {
				out = append(out, encoding(e))
			}
		}
		return out
	}
	scrape(expfmt.FmtText)
	scrape(expfmt.FmtProtoDelim)
	if got := encoded(); !slices.Equal(got, []encoding{encText, encProtobuf}) {
		t.Fatalf("after a text and a protobuf scrape: encodings kept %v", got)
	}
	now = now.Add(encodedKeep)
	scrape(expfmt.FmtProtoDelim)
	if got := encoded(); !slices.Equal(got, []encoding{encText, encProtobuf}) {
		t.Errorf("text last asked for encodedKeep ago: encodings kept %v, want both", got)
	}
	now = now.Add(time.Second)
	scrape(expfmt.FmtProtoDelim)
	if got := encoded(); !slices.Equal(got, []encoding{encProtobuf}) {
		t.Errorf("text last asked for more than encodedKeep ago: encodings kept %v, want protobuf alone", got)
	}
	compareFormat(t, j, expfmt.FmtText)
}

// compareFormat checks j.WriteFormat against expfmt's encoding of
// j.Gather.
func compareFormat(t *testing.T, j *Joined, format expfmt.Format) {
	t.Helper()
	want := encodeFormat(t, j, format)
	got := bytes.NewBufferString("kept:")
	if err := j.WriteFormat(got, format); err != nil {
		t.Fatal(err)
	}
	if got.String() == "kept:"+want {
		return
	}
	if format.FormatType() == expfmt.TypeProtoDelim {
		t.Fatalf("%s: %d bytes, want %d, not the same", format, got.Len()-len("kept:"), len(want))
	}
	gl, wl := strings.Split(got.String(), "\n"), strings.Split("kept:"+want, "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("%s: line %d\n got %q\nwant %q", format, i+1, gl[i], wl[i])
		}
	}
	t.Fatalf("%s: %d lines, want %d", format, len(gl), len(wl))
}

// encodeFormat is j's Gather encoded in format by expfmt, as promhttp
// encodes it (the encoder closed).
func encodeFormat(t *testing.T, j *Joined, format expfmt.Format) string {
	t.Helper()
	mfs, err := j.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	enc := expfmt.NewEncoder(&b, format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.(expfmt.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fetch GETs url with accept as the Accept header and returns the body
// and its Content-Type.
func fetch(t *testing.T, url, accept string) (string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, body := daemontest.Send(t, http.DefaultClient, req)
	return string(body), resp.Header.Get("Content-Type")
}

// compareWithRegistry checks c.Gather against a pedantic registry's.
func compareWithRegistry(t *testing.T, c *Collector) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d families, want %d: %v", len(got), len(want), familyNames(got))
	}
	if !slices.IsSortedFunc(got, func(a, b *dto.MetricFamily) int { return cmp.Compare(a.GetName(), b.GetName()) }) {
		t.Errorf("families not sorted by name: %v", familyNames(got))
	}
	for i, w := range want {
		g := got[i]
		if g.GetName() != w.GetName() || g.GetHelp() != w.GetHelp() || g.GetType() != w.GetType() {
			t.Errorf("family %d: %s (%s) %q, want %s (%s) %q", i, g.GetName(), g.GetType(), g.GetHelp(), w.GetName(), w.GetType(), w.GetHelp())
			continue
		}
		if !pairOrdered(g.Metric) {
			t.Errorf("%s: series not in pair order", g.GetName())
		}
		gm := slices.Clone(g.Metric)
		slices.SortFunc(gm, func(a, b *dto.Metric) int { return cmp.Compare(labelString(a), labelString(b)) })
		if len(gm) != len(w.Metric) {
			t.Errorf("%s: %d series, want %d", g.GetName(), len(gm), len(w.Metric))
			continue
		}
		for j := range gm {
			if !proto.Equal(gm[j], w.Metric[j]) {
				t.Errorf("%s series %d:\n got %v\nwant %v", g.GetName(), j, gm[j], w.Metric[j])
			}
		}
	}
}

// labelString renders a series' labels, sorted by name.
func labelString(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		fmt.Fprintf(&b, "%s=%q,", l.GetName(), l.GetValue())
	}
	return b.String()
}

// pairOrdered reports whether series come ordered by (target, probe,
// replica).
func pairOrdered(ms []*dto.Metric) bool {
	return slices.IsSortedFunc(ms, func(a, b *dto.Metric) int {
		la, lb := labelsOf(a), labelsOf(b)
		return compareKeys(config.PairKey{Target: la[labelTarget], Probe: la[labelProbe], Replica: la[labelReplica]},
			config.PairKey{Target: lb[labelTarget], Probe: lb[labelProbe], Replica: lb[labelReplica]})
	})
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func familyNames(mfs []*dto.MetricFamily) []string {
	var out []string
	for _, mf := range mfs {
		out = append(out, mf.GetName())
	}
	return out
}

// TestJoin: families of both gatherers come sorted by name; a family
// gathered twice is an error and is served once.
func TestJoin(t *testing.T) {
	c := New(Options{Now: clock})
	syncPairs(c, testConfig(map[string][]string{"t": nil}, map[string]config.SLO{"p": {}}))
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "aaa_first"}), prometheus.NewGauge(prometheus.GaugeOpts{Name: "zzz_last"}))
	mfs, err := Join(reg, c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := familyNames(mfs)
	if !slices.IsSorted(names) || names[0] != "aaa_first" || names[len(names)-1] != "zzz_last" || !slices.Contains(names, "vllm_probe_requests_total") {
		t.Errorf("families %v, want sorted, from both", names)
	}
	dup := prometheus.NewRegistry()
	dup.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "vllm_probe_requests_in_flight"}))
	mfs, err = Join(c, dup).Gather()
	if err == nil || !strings.Contains(err.Error(), "metric family vllm_probe_requests_in_flight gathered twice") {
		t.Errorf("error %v, want the family gathered twice", err)
	}
	if n := strings.Count(strings.Join(familyNames(mfs), " "), "vllm_probe_requests_in_flight"); n != 1 {
		t.Errorf("vllm_probe_requests_in_flight served %d times, want once", n)
	}
}
