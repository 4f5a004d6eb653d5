package server

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/vllm-prober/vllm-prober/config"
)

// DefaultAllow selects the vLLM families re-exported when the config sets
// no server_metrics.allow; the config package owns the list.
const DefaultAllow = config.DefaultServerMetricsAllow

// Reasons a scraped series is not re-exported, the values of the reason
// label of vllm_prober_server_series_dropped_total.
const (
	dropLimit           = "limit"            // past ScraperOptions.MaxSeriesPerTarget
	dropInvalidName     = "invalid_name"     // not a valid classic Prometheus metric name
	dropInvalidLabel    = "invalid_label"    // invalid label name or value, or le/quantile on the wrong type
	dropDuplicate       = "duplicate"        // same name and labels seen before in the same scrape
	dropConflict        = "conflict"         // another target exports the name with another type, or suffixes collide
	dropReserved        = "reserved"         // the name belongs to the prober's own namespaces
	dropUnsupportedType = "unsupported_type" // gauge histograms and other types without a classic form
)

var dropReasons = []string{dropLimit, dropInvalidName, dropInvalidLabel, dropDuplicate, dropConflict, dropReserved, dropUnsupportedType}

// reservedPrefixes are namespaces the prober's own registry uses; a scraped
// family there would clash with ours.
var reservedPrefixes = []string{"vllm_probe_", "vllm_prober_", "go_", "process_", "promhttp_"}

// family is one re-exported metric family of one target: labels sorted, the
// target label added, timestamps dropped. It is immutable once built.
type family struct {
	name    string
	typ     dto.MetricType
	help    string
	desc    *prometheus.Desc
	metrics []*dto.Metric
}

// familyInfo is what other targets already export under a name.
type familyInfo struct {
	typ  dto.MetricType
	help string
}

// dropNote names one dropped family or series, for a one-time log line.
type dropNote struct{ name, reason string }

// decodeFamilies parses an exposition in format (text, OpenMetrics or
// delimited protobuf). Any parse error fails the whole scrape, as in
// Prometheus.
func decodeFamilies(r io.Reader, format expfmt.Format) ([]*dto.MetricFamily, error) {
	dec := expfmt.NewDecoder(r, format)
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parse metrics: %w", err)
		}
		out = append(out, mf)
	}
}

// familyBuilder filters and relabels one target's families. others holds the
// families the other targets export now, so types and help stay consistent
// across targets and the registry never sees a collision.
type familyBuilder struct {
	// own are the labels every series gets: target, and replica for a
	// discovered replica.
	ownNames, ownValues []string
	allow               *regexp.Regexp
	limit               int
	others              map[string]familyInfo
	own                 map[string]familyInfo
	series              int
	out                 []*family
	dropped             map[string]int
	notes               []dropNote
}

func newFamilyBuilder(ownNames, ownValues []string, allow *regexp.Regexp, limit int, others map[string]familyInfo) *familyBuilder {
	return &familyBuilder{
		ownNames: ownNames, ownValues: ownValues, allow: allow, limit: limit, others: others,
		own: map[string]familyInfo{}, dropped: map[string]int{},
	}
}

func (b *familyBuilder) drop(name, reason string, n int) {
	if n <= 0 {
		return
	}
	b.dropped[reason] += n
	b.notes = append(b.notes, dropNote{name, reason})
}

func (b *familyBuilder) exists(name string) (dto.MetricType, bool) {
	if fi, ok := b.own[name]; ok {
		return fi.typ, true
	}
	fi, ok := b.others[name]
	return fi.typ, ok
}

// add considers one parsed family.
func (b *familyBuilder) add(mf *dto.MetricFamily) {
	name := mf.GetName()
	if !b.allow.MatchString(name) {
		return
	}
	if reason := b.refuse(name, mf.GetType()); reason != "" {
		b.drop(name, reason, len(mf.GetMetric()))
		return
	}
	help := mf.GetHelp()
	if fi, ok := b.others[name]; ok {
		help = fi.help
	}
	if !utf8.ValidString(help) {
		help = strings.ToValidUTF8(help, "?")
	}
	f := &family{name: name, typ: mf.GetType(), help: help, desc: prometheus.NewDesc(name, help, nil, nil)}
	seen := map[string]struct{}{}
	for _, m := range mf.GetMetric() {
		if reason := b.relabel(m, f.typ, seen); reason != "" {
			b.drop(name, reason, 1)
			continue
		}
		f.metrics = append(f.metrics, m)
	}
	b.own[name] = familyInfo{f.typ, help}
	if len(f.metrics) > 0 {
		b.out = append(b.out, f)
	}
}

// refuse returns why a whole family cannot be re-exported, or "".
func (b *familyBuilder) refuse(name string, typ dto.MetricType) string {
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return dropReserved
		}
	}
	if !model.LegacyValidation.IsValidMetricName(name) {
		return dropInvalidName
	}
	switch typ {
	case dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY, dto.MetricType_UNTYPED:
	default:
		return dropUnsupportedType
	}
	if _, ok := b.own[name]; ok {
		return dropDuplicate
	}
	if fi, ok := b.others[name]; ok && fi.typ != typ {
		return dropConflict
	}
	if suffixCollision(name, typ, b.exists) {
		return dropConflict
	}
	return ""
}

// suffixCollision reports whether name clashes with the _bucket, _count and
// _sum series of an existing histogram or summary, or the reverse (the
// client_golang registry refuses both).
func suffixCollision(name string, typ dto.MetricType, exists func(string) (dto.MetricType, bool)) bool {
	for _, suffix := range []string{"_count", "_sum", "_bucket"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if t, ok := exists(base); ok && (t == dto.MetricType_HISTOGRAM || t == dto.MetricType_SUMMARY && suffix != "_bucket") {
			return true
		}
	}
	if typ != dto.MetricType_HISTOGRAM && typ != dto.MetricType_SUMMARY {
		return false
	}
	for _, suffix := range []string{"_count", "_sum", "_bucket"} {
		if _, ok := exists(name + suffix); ok {
			return true
		}
	}
	return false
}

// relabel checks one series, renames an existing target label to
// exported_target (replica likewise), adds target (and replica), sorts the
// labels and drops the timestamp.
// It returns a drop reason or "".
func (b *familyBuilder) relabel(m *dto.Metric, typ dto.MetricType, seen map[string]struct{}) string {
	if !hasValue(m, typ) {
		return dropInvalidLabel
	}
	labels := make([]*dto.LabelPair, 0, len(m.GetLabel())+1)
	for _, lp := range m.GetLabel() {
		n, v := lp.GetName(), lp.GetValue()
		if !model.LegacyValidation.IsValidLabelName(n) || strings.HasPrefix(n, model.ReservedLabelPrefix) || !utf8.ValidString(v) ||
			n == model.BucketLabel && typ == dto.MetricType_HISTOGRAM || n == model.QuantileLabel && typ == dto.MetricType_SUMMARY {
			return dropInvalidLabel
		}
		labels = append(labels, &dto.LabelPair{Name: &n, Value: &v})
	}
	for i, name := range b.ownNames {
		renameExported(labels, name)
		labels = append(labels, &dto.LabelPair{Name: &b.ownNames[i], Value: &b.ownValues[i]})
	}
	slices.SortFunc(labels, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	for i := 1; i < len(labels); i++ {
		if labels[i].GetName() == labels[i-1].GetName() {
			return dropInvalidLabel
		}
	}
	sig := labelSignature(labels)
	if _, dup := seen[sig]; dup {
		return dropDuplicate
	}
	if b.series >= b.limit {
		return dropLimit
	}
	seen[sig] = struct{}{}
	b.series++
	m.Label = labels
	m.TimestampMs = nil
	return ""
}

// renameExported moves a scraped label called name (target, replica) out
// of the way, as Prometheus does with honor_labels: false
// (exported_target, exported_exported_target...).
func renameExported(labels []*dto.LabelPair, name string) {
	taken := map[string]bool{}
	for _, lp := range labels {
		taken[lp.GetName()] = true
	}
	for _, lp := range labels {
		if lp.GetName() != name {
			continue
		}
		n := "exported_" + name
		for taken[n] {
			n = "exported_" + n
		}
		lp.Name = &n
	}
}

func hasValue(m *dto.Metric, typ dto.MetricType) bool {
	switch typ {
	case dto.MetricType_COUNTER:
		return m.Counter != nil
	case dto.MetricType_GAUGE:
		return m.Gauge != nil
	case dto.MetricType_HISTOGRAM:
		return m.Histogram != nil
	case dto.MetricType_SUMMARY:
		return m.Summary != nil
	case dto.MetricType_UNTYPED:
		return m.Untyped != nil
	}
	return false
}

func labelSignature(labels []*dto.LabelPair) string {
	var sb strings.Builder
	for _, lp := range labels {
		sb.WriteString(lp.GetName())
		sb.WriteByte(0)
		sb.WriteString(lp.GetValue())
		sb.WriteByte(0)
	}
	return sb.String()
}

// serverMetric re-exports one scraped series as it was parsed.
type serverMetric struct {
	desc *prometheus.Desc
	m    *dto.Metric
}

// Desc implements prometheus.Metric.
func (s serverMetric) Desc() *prometheus.Desc { return s.desc }

// Write implements prometheus.Metric. The shared parts are never mutated:
// the registry treats written labels as immutable.
func (s serverMetric) Write(out *dto.Metric) error {
	out.Label = s.m.Label
	out.Counter = s.m.Counter
	out.Gauge = s.m.Gauge
	out.Histogram = s.m.Histogram
	out.Summary = s.m.Summary
	out.Untyped = s.m.Untyped
	return nil
}
