package server

import (
	"regexp"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func labelPairs(kv ...string) []*dto.LabelPair {
	var out []*dto.LabelPair
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &dto.LabelPair{Name: &kv[i], Value: &kv[i+1]})
	}
	return out
}

func gaugeFamily(name string, labelSets ...[]*dto.LabelPair) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: &name, Type: dto.MetricType_GAUGE.Enum()}
	for _, ls := range labelSets {
		mf.Metric = append(mf.Metric, &dto.Metric{Label: ls, Gauge: &dto.Gauge{Value: new(1.0)}})
	}
	return mf
}

func TestFamilyBuilderDrops(t *testing.T) {
	histWithLe := &dto.MetricFamily{Name: new("vllm:h"), Type: dto.MetricType_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{Label: labelPairs("le", "1"), Histogram: &dto.Histogram{}}}}
	tests := []struct {
		name   string
		mf     *dto.MetricFamily
		others map[string]familyInfo
		kept   int
		reason string
	}{
		{"valid family kept", gaugeFamily("vllm:ok", nil, labelPairs("engine", "1")), nil, 2, ""},
		{"invalid metric name (UTF-8 via protobuf)", gaugeFamily("vllm:bad-name", nil), nil, 0, dropInvalidName},
		{"reserved label name", gaugeFamily("vllm:g", labelPairs("__x", "1")), nil, 0, dropInvalidLabel},
		{"invalid label name", gaugeFamily("vllm:g", labelPairs("a-b", "1")), nil, 0, dropInvalidLabel},
		{"label value not UTF-8", gaugeFamily("vllm:g", labelPairs("a", "\xff")), nil, 0, dropInvalidLabel},
		{"le label on a histogram series", histWithLe, nil, 0, dropInvalidLabel},
		{"duplicate series", gaugeFamily("vllm:g", labelPairs("a", "1"), labelPairs("a", "1")), nil, 1, dropDuplicate},
		{"type conflict with another target", gaugeFamily("vllm:g", nil), map[string]familyInfo{"vllm:g": {typ: dto.MetricType_COUNTER}}, 0, dropConflict},
		{"gauge histogram", &dto.MetricFamily{Name: new("vllm:gh"), Type: dto.MetricType_GAUGE_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{}}}}, nil, 0, dropUnsupportedType},
		{"series without a value of its type", &dto.MetricFamily{Name: new("vllm:c"), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: new(1.0)}}}}, nil, 0, dropInvalidLabel},
		{"prober namespace", gaugeFamily("vllm_probe_requests_in_flight", nil), nil, 0, dropReserved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			others := tc.others
			if others == nil {
				others = map[string]familyInfo{}
			}
			b := newFamilyBuilder([]string{"target"}, []string{"t"}, regexp.MustCompile(".*"), 100, others)
			b.add(tc.mf)
			kept := 0
			for _, f := range b.out {
				kept += len(f.metrics)
			}
			if kept != tc.kept {
				t.Errorf("kept %d series, want %d", kept, tc.kept)
			}
			if tc.reason != "" && b.dropped[tc.reason] == 0 {
				t.Errorf("dropped %v, want reason %s", b.dropped, tc.reason)
			}
			if tc.reason == "" && len(b.dropped) != 0 {
				t.Errorf("unexpected drops %v", b.dropped)
			}
		})
	}
}

func TestAllow(t *testing.T) {
	tests := []struct {
		allow          string
		match, nomatch []string
	}{
		{DefaultAllow, []string{
			"vllm:time_to_first_token_seconds",
			"vllm:request_queue_time_seconds",
			"vllm:num_requests_waiting_by_reason",
			"vllm:kv_cache_usage_perc",
			"vllm:num_preemptions_total",
			"vllm:request_success_total",
			"vllm:prompt_tokens_by_source_total",
			"vllm:external_prefix_cache_hits_total",
			"vllm:spec_decode_num_accepted_tokens_per_pos_total",
		}, []string{
			"vllm:request_success_created",
			"vllm:cache_config_info",
			"vllm:iteration_tokens_total",
			"http_requests_total",
		}},
		{"vllm:num", nil, []string{"vllm:num_requests_running"}},
		{"vllm:num.*|vllm:kv.*", []string{"vllm:kv_cache_usage_perc"}, nil},
	}
	for _, tc := range tests {
		re, err := compileAllow(tc.allow)
		if err != nil {
			t.Fatal(err)
		}
		for _, side := range []struct {
			want  bool
			names []string
		}{{true, tc.match}, {false, tc.nomatch}} {
			want := side.want
			for _, name := range side.names {
				t.Run(tc.allow+" "+name, func(t *testing.T) {
					if got := re.MatchString(name); got != want {
						t.Errorf("match %v, want %v", got, want)
					}
				})
			}
		}
	}
	if _, err := compileAllow("vllm:("); err == nil {
		t.Error("invalid allow must fail to compile")
	}
}
