package svgchart

import (
	"math"
	"strconv"
)

// FormatNumber formats a tick value: whole numbers from 1000 up, at most
// three significant digits below.
func FormatNumber(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// num formats a coordinate with one decimal, which is finer than a pixel.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// niceCeil rounds an axis maximum v up to 1, 1.5, 2, 2.5, 3, 4, 5, 6 or
// 8 times a power of ten.
func niceCeil(v float64) float64 {
	return roundUp(v, []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10})
}

// niceStep rounds a tick step v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 { return roundUp(v, []float64{1, 2, 5, 10}) }

func roundUp(v float64, mantissas []float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range mantissas {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
