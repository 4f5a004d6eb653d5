// Package promtest writes the promtool unit tests (`promtool test rules`)
// that prove the rules package rules generates from a configuration:
// every alert quiet on a healthy service and firing in a scenario of its
// own, the recording rules against the methodology's worked example, and
// the fleet alerts on a target with discovery. It reads the same plan as
// the rules (rules/internal/plan), so the expected alerts, windows and
// values follow every window the plan widened or alert it dropped.
package promtest

// File is a promtool unit test file (`promtool test rules`).
type File struct {
	RuleFiles          []string `yaml:"rule_files"`
	EvaluationInterval string   `yaml:"evaluation_interval"`
	Tests              []Group  `yaml:"tests"`
}

// Group is one scenario: input series and the alerts expected.
type Group struct {
	Name           string        `yaml:"name,omitempty"`
	Interval       string        `yaml:"interval"`
	InputSeries    []InputSeries `yaml:"input_series"`
	AlertRuleTests []AlertTest   `yaml:"alert_rule_test"`
	ExprTests      []ExprTest    `yaml:"promql_expr_test,omitempty"`
}

// ExprTest checks the value of a PromQL expression at one time.
type ExprTest struct {
	Expr       string      `yaml:"expr"`
	EvalTime   string      `yaml:"eval_time"`
	ExpSamples []ExpSample `yaml:"exp_samples"`
}

// ExpSample is one expected sample of an ExprTest.
type ExpSample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// InputSeries is one series in promtool's expanding notation.
type InputSeries struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

// AlertTest lists every alert of one name expected at one time.
type AlertTest struct {
	EvalTime  string     `yaml:"eval_time"`
	Alertname string     `yaml:"alertname"`
	ExpAlerts []ExpAlert `yaml:"exp_alerts"`
}

// ExpAlert is one expected firing alert.
type ExpAlert struct {
	ExpLabels      map[string]string `yaml:"exp_labels"`
	ExpAnnotations map[string]string `yaml:"exp_annotations"`
}
