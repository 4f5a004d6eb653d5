package rules

import (
	"fmt"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
)

// A probe's `histograms:` and `classic_buckets:` (docs/design.md, Series
// budget) decide what the rules may read: a rule that needs a histogram a
// probe left out is dropped for that probe with a warning, and one that
// reads a native-only histogram uses the native form of
// histogram_quantile (no le label, no _bucket series).

// histogramForms says in which form the pairs a rule reads export a
// histogram: with classic buckets, native only, or both among them.
type histogramForms struct{ classic, native bool }

// formsOf returns the forms in which the pairs export metric.
func (p builder) formsOf(metric string) histogramForms {
	var f histogramForms
	for _, pp := range p.Pairs {
		if !pp.Hist.Has(metricname.SelectedBy[metric]) {
			continue
		}
		if pp.Hist.Classic {
			f.classic = true
		} else {
			f.native = true
		}
	}
	return f
}

// quantileExpr is the q-quantile of metric over window w, summed by the
// labels of by: from its classic buckets, from its native histograms, or,
// when pairs export both forms, the classic quantile where there are
// buckets and the native one for the series that have none (`or` matches
// on the by labels). The result is parenthesised when it has an `or`, so
// a comparison after it applies to both.
func quantileExpr(q, metric, sel, by, w string, f histogramForms) string {
	classic := fmt.Sprintf("histogram_quantile(%s, sum by (%s, le) (rate(%s_bucket%s[%s])))", q, by, metric, sel, w)
	native := fmt.Sprintf("histogram_quantile(%s, sum by (%s) (rate(%s%s[%s])))", q, by, metric, sel, w)
	switch {
	case f.classic && f.native:
		return "(\n" + classic + "\nor\n" + native + "\n)"
	case f.native:
		return native
	}
	return classic
}
