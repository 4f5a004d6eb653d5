package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
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
		// A --config.file probe brings its own workload: a bench workload
		// flag beside it used to be ignored without a word.
		{"base url with config", []string{"--config.file", "x.yml", "--probe", "chat", "--base-url", "http://127.0.0.1:9"}},
		{"random length with config", []string{"--config.file", "x.yml", "--probe", "chat", "--random-input-len", "99"}},
		{"timeout with config", []string{"--config.file", "x.yml", "--probe", "chat", "--timeout", "5s"}},
		{"goodput with config", []string{"--config.file", "x.yml", "--probe", "chat", "--goodput", "ttft:100"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parse(tt.args...); ExitCode(err) != 2 {
				t.Errorf("err = %v, want a usage error (exit 2)", err)
			}
		})
	}
}

func TestCapacityConfigRefusesWorkloadFlags(t *testing.T) {
	app := kingpin.New("test", "")
	f := RegisterCapacityFlags(app.Command("capacity", ""))
	if _, err := app.Parse([]string{"capacity", "--config.file", "x.yml", "--probe", "chat", "--port", "9"}); err != nil {
		t.Fatal(err)
	}
	_, err := f.Options()
	if ExitCode(err) != 2 || !strings.Contains(err.Error(), "--port is a bench workload flag, not used with --config.file") {
		t.Errorf("err = %v, want a usage error naming --port", err)
	}
	app = kingpin.New("test", "")
	f = RegisterCapacityFlags(app.Command("capacity", ""))
	if _, err := app.Parse([]string{"capacity", "--config.file", "x.yml", "--probe", "chat", "--rates", "1,2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Options(); err != nil {
		t.Errorf("config mode without workload flags: %v", err)
	}
}

func TestCapacityOrderValidate(t *testing.T) {
	o := CapacityOptions{Rates: []float64{1}, Repeats: 1, Duration: time.Second, Burstiness: 1, Order: "descending",
		Rule: capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}}
	if err := o.validate(); ExitCode(err) != 2 || !strings.Contains(err.Error(), `--order "descending"`) {
		t.Errorf("err = %v, want a usage error naming --order", err)
	}
}
