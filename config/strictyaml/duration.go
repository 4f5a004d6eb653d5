package strictyaml

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"
)

// durationUnits are the units of a Prometheus duration (model.Duration),
// longest first.
var durationUnits = []struct {
	name string
	d    time.Duration
}{
	{"y", 365 * 24 * time.Hour}, {"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour},
	{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond},
}

// durationTerm is one number and unit of a duration, the number possibly
// with a fraction; ms comes before m so that 5ms is not read as 5m.
var durationTerm = regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|[ywdhms])`)

// wholeDuration rewrites a duration with fractions, which model.Duration
// refuses, as a whole number of the largest unit that fits it exactly:
// 1.5s is 1500ms, 0.5m is 30s, 2.5h is 150m. ok is false when s has no
// fraction, is not otherwise a duration, or is not a whole number of
// milliseconds.
func wholeDuration(s string) (whole string, ok bool) {
	if !strings.Contains(s, ".") {
		return "", false
	}
	total := new(big.Rat)
	for rest := s; rest != ""; {
		m := durationTerm.FindStringSubmatch(rest)
		if m == nil {
			return "", false
		}
		n, ok := new(big.Rat).SetString(m[1])
		if !ok {
			return "", false
		}
		for _, u := range durationUnits {
			if u.name == m[2] {
				total.Add(total, n.Mul(n, new(big.Rat).SetInt64(int64(u.d))))
			}
		}
		rest = rest[len(m[0]):]
	}
	if !total.IsInt() || !total.Num().IsInt64() || total.Sign() <= 0 {
		return "", false
	}
	ns := total.Num().Int64()
	for _, u := range durationUnits {
		if ns%int64(u.d) == 0 {
			return fmt.Sprintf("%d%s", ns/int64(u.d), u.name), true
		}
	}
	return "", false
}
