package status

import (
	"math"
	"testing"
	"time"
)

func TestMinutesSeriesFreshMinute(t *testing.T) {
	at := func(m int64) time.Time { return time.Unix(m*60, 0) }
	value := func(m MinuteStats) (float64, bool) { return float64(m.Accepted), m.Ended > 0 }
	for _, c := range []struct {
		name    string
		minutes []MinuteStats
		want    []float64 // NaN = gap
	}{
		{"not running, full, empty and a fresh current minute", []MinuteStats{
			{Start: at(1)}, {Start: at(2), Running: true, Ran: time.Minute, Ended: 3, Accepted: 2},
			{Start: at(3), Running: true, Ran: time.Minute}, {Start: at(4), Running: true, Ran: 10 * time.Second, Ended: 1},
		}, []float64{2, math.NaN()}},
		{"the current minute once 20s old", []MinuteStats{
			{Start: at(2), Running: true, Ran: time.Minute, Ended: 3, Accepted: 2}, {Start: at(3), Running: true, Ran: 20 * time.Second, Ended: 1, Accepted: 1},
		}, []float64{2, 1}},
		{"a fresh minute that is the pair's only one", []MinuteStats{
			{Start: at(3)}, {Start: at(4), Running: true, Ran: 5 * time.Second, Ended: 1, Accepted: 1},
		}, []float64{1}},
		{"a fresh minute that holds the series' first value", []MinuteStats{
			{Start: at(3), Running: true, Ran: 30 * time.Second}, {Start: at(4), Running: true, Ran: 5 * time.Second, Ended: 1, Accepted: 1},
		}, []float64{math.NaN(), 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pts := minutesSeries(c.minutes, value)
			if len(pts) != len(c.want) {
				t.Fatalf("%v, want %v", pts, c.want)
			}
			for i, w := range c.want {
				if got := pts[i].Y; got != w && !(math.IsNaN(got) && math.IsNaN(w)) {
					t.Errorf("point %d: %v, want %v", i, got, w)
				}
			}
		})
	}
}
