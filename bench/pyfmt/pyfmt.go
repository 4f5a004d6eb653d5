// Package pyfmt formats numbers as Python prints them, so the output of
// `vllm-prober bench` and `vllm-prober capacity` compares with `vllm bench
// serve`'s line by line.
package pyfmt

import (
	"math"
	"strconv"
	"strings"
)

// Float formats like Python's "{:.2f}" (inf, nan spelled as Python does).
func Float(v float64, prec int) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		return "nan"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// Rate renders a rate as Python's str(float) does: "inf", "10.0", "0.5".
func Rate(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// Percentile is vLLM's P label: an integer percentile without a
// fraction, others as Python prints them.
func Percentile(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// JSONFloat keeps infinities out of JSON numbers: Python writes the
// string "inf" for --request-rate inf, and so do we for any infinity.
func JSONFloat(v float64) any {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return Float(v, 2)
	}
	return v
}
