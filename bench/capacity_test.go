package bench

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/stats"
)

func TestStaircase(t *testing.T) {
	tests := []struct {
		name                         string
		list                         []float64
		start, maxRate, factor, step float64
		want                         []float64
		bad                          bool
	}{
		{name: "list sorted and deduplicated", list: []float64{4, 1, 2, 2}, want: []float64{1, 2, 4}},
		{name: "geometric", start: 1, maxRate: 10, factor: 2, want: []float64{1, 2, 4, 8}},
		{name: "linear", start: 5, maxRate: 20, step: 5, factor: 2, want: []float64{5, 10, 15, 20}},
		{name: "negative in list", list: []float64{1, -1}, bad: true},
		{name: "zero start", start: 0, maxRate: 10, factor: 2, bad: true},
		{name: "max below start", start: 4, maxRate: 2, factor: 2, bad: true},
		{name: "factor 1", start: 1, maxRate: 2, factor: 1, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := staircase(tt.list, tt.start, tt.maxRate, tt.factor, tt.step)
			if tt.bad {
				if ExitCode(err) != 2 {
					t.Errorf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("staircase = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestCapacityFlags(t *testing.T) {
	parse := func(args ...string) (CapacityOptions, error) {
		app := kingpin.New("test", "")
		f := RegisterCapacityFlags(app.Command("capacity", ""))
		if _, err := app.Parse(append([]string{"capacity"}, args...)); err != nil {
			return CapacityOptions{}, err
		}
		return f.Options()
	}
	o, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if o.Repeats != 2 || o.Rule.MinAcceptance != 0.99 || o.Rule.Percentile != 99 || !slices.Equal(o.Rates, []float64{1, 2, 4, 8, 16, 32, 64}) ||
		o.Order != capacity.OrderInterleaved || o.Rule.SteadyRatio != 2 || o.Rule.SteadyGrowth != 50*time.Millisecond {
		t.Errorf("defaults: repeats %d rule %+v rates %v", o.Repeats, o.Rule, o.Rates)
	}
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"goodput", []string{"--goodput", "ttft:abc"}},
		{"zero repeats", []string{"--repeats", "0"}},
		{"negative rate", []string{"--rates", "1,-2"}},
		{"rates not numbers", []string{"--rates", "1,x"}},
		{"acceptance above 1", []string{"--pass-acceptance", "1.5"}},
		{"probe without config", []string{"--probe", "chat"}},
		{"config without probe", []string{"--config.file", "x.yml"}},
		{"zero duration", []string{"--level-duration", "0s"}},
		{"steady ratio below 1", []string{"--steady-ratio", "0.5"}},
		{"stray argument", []string{"tpot:40"}},
		{"bad nargs goodput", []string{"--goodput", "ttft:1", "tpot:x"}},
		{"shard without start", []string{"--shard", "1/3"}},
		{"bad shard", []string{"--shard", "3/3", "--start-at", "2026-01-02T15:04:05Z"}},
		{"bad start", []string{"--start-at", "tomorrow"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parse(tt.args...); ExitCode(err) != 2 {
				t.Errorf("err = %v, want a usage error (exit 2)", err)
			}
		})
	}
}

func TestCapacityOrderValidate(t *testing.T) {
	o := CapacityOptions{Rates: []float64{1}, Repeats: 1, Duration: time.Second, Burstiness: 1, Order: "descending",
		Rule: capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}}
	if err := o.validate(); ExitCode(err) != 2 || !strings.Contains(err.Error(), `--order "descending"`) {
		t.Errorf("err = %v, want a usage error naming --order", err)
	}
}

// svgDoc checks that b is well-formed XML and returns its text.
func svgDoc(t *testing.T, b []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	paths := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not valid XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "path" {
				paths++
			}
		case xml.CharData:
			text.Write(el)
		}
	}
	if paths < 10 {
		t.Errorf("SVG has %d paths, want the curves drawn", paths)
	}
	return text.String()
}

func TestWriteChart(t *testing.T) {
	s := &capacity.Search{Rated: 5, Saturated: true, LowestFail: 6}
	for _, r := range []float64{1, 2, 4, 5, 6, 8} {
		for i := range 2 {
			g := math.Min(r, 5.5) * 0.995
			s.Repeats = append(s.Repeats, capacity.Repeat{Rate: r, Index: i, Pass: r <= 5, Metrics: stats.Metrics{CompletedThroughput: math.Min(r, 6), Goodput: g}})
		}
	}
	var buf bytes.Buffer
	if err := writeChartSVG(&buf, s, capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}, "Capacity of test"); err != nil {
		t.Fatal(err)
	}
	text := svgDoc(t, buf.Bytes())
	for _, want := range []string{"Capacity of test", "completed/s (wall clock)", "goodput/s (accepted)", "pass line", "rated capacity 5.00 req/s", "failing repeat", "offered load (req/s)"} {
		t.Run(want, func(t *testing.T) {
			if !strings.Contains(text, want) {
				t.Errorf("chart lacks %q", want)
			}
		})
	}
}
