package simulator

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkEventTiming measures how closely the simulator's event write
// times (taken after each flush) follow its configured latency model with
// jitter off: the first content event against PrefillBase +
// PrefillPerToken*prompt tokens from arrival, every later gap against
// DecodeBase + DecodePerSeq. Requests run one at a time (idle server).
//
//	go test -run '^$' -bench EventTiming -benchtime 100x ./simulator/
func BenchmarkEventTiming(b *testing.B) {
	o := DefaultOptions()
	o.Jitter, o.PrefixCaching, o.Trace = 0, false, true
	s, url := startTest(b, o)
	const promptTokens, outputTokens = 100, 16
	wantTTFT := o.PrefillBase + promptTokens*o.PrefillPerToken
	wantITL := o.DecodeBase + o.DecodePerSeq
	ids := strings.TrimSuffix(strings.Repeat("7,", promptTokens), ",")
	body := fmt.Sprintf(`{"prompt":[%s],"max_tokens":%d,"ignore_eos":true,"stream":true}`, ids, outputTokens)
	b.ResetTimer()
	for range b.N {
		r := streamRequest(context.Background(), b, url+"/v1/completions", body)
		if !r.done() {
			b.Fatalf("stream not done: %v", r.readErr)
		}
	}
	b.StopTimer()
	var ttftErr, itlErr []float64
	for _, rec := range s.Trace() {
		var prev time.Time
		for _, ev := range rec.Events {
			if ev.Tokens == 0 {
				continue
			}
			if prev.IsZero() {
				ttftErr = append(ttftErr, float64(ev.Time.Sub(rec.Arrival)-wantTTFT)/float64(time.Microsecond))
			} else {
				itlErr = append(itlErr, float64(ev.Time.Sub(prev)-wantITL)/float64(time.Microsecond))
			}
			prev = ev.Time
		}
	}
	report(b, "ttft", ttftErr)
	report(b, "itl", itlErr)
}

// report adds the mean signed error and p50, p99 and max of the absolute
// error, in microseconds.
func report(b *testing.B, name string, errs []float64) {
	abs := make([]float64, len(errs))
	sum := 0.0
	for i, e := range errs {
		abs[i] = math.Abs(e)
		sum += e
	}
	slices.Sort(abs)
	if len(abs) == 0 {
		return
	}
	q := func(p float64) float64 { return abs[min(len(abs)-1, int(math.Ceil(p*float64(len(abs))))-1)] }
	b.ReportMetric(sum/float64(len(errs)), name+"_mean_err_us")
	b.ReportMetric(q(0.50), name+"_p50_abs_err_us")
	b.ReportMetric(q(0.99), name+"_p99_abs_err_us")
	b.ReportMetric(abs[len(abs)-1], name+"_max_abs_err_us")
}
