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

// mixed says whether pairs export the histogram in both forms, so its
// quantile joins two expressions with `or`.
func (f histogramForms) mixed() bool { return f.classic && f.native }

// quantileExpr is the q-quantile of metric over window w, summed by the
// labels of by: from its classic buckets, from its native histograms, or,
// when pairs export both forms (mixed), the classic quantile where there
// are buckets and the native one for the series that have none (`or`
// matches on the by labels). A mixed result is not parenthesised: the
// caller puts it in the one pair of parentheses it needs (quantileOperand,
// targetExpr's sides).
func quantileExpr(q, metric, sel, by, w string, f histogramForms) string {
	classic := fmt.Sprintf("histogram_quantile(%s, sum by (%s, le) (rate(%s_bucket%s[%s])))", q, by, metric, sel, w)
	native := fmt.Sprintf("histogram_quantile(%s, sum by (%s) (rate(%s%s[%s])))", q, by, metric, sel, w)
	switch {
	case f.mixed():
		return classic + "\nor\n" + native
	case f.native:
		return native
	}
	return classic
}

// quantileOperand is quantileExpr parenthesised when it is mixed, so a
// comparison after it applies to both sides of its `or`.
func quantileOperand(q, metric, sel, by, w string, f histogramForms) string {
	e := quantileExpr(q, metric, sel, by, w, f)
	if f.mixed() {
		return "(\n" + e + "\n)"
	}
	return e
}
