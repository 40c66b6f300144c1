package scenario

import (
	"testing"
	"time"
)

func TestPeakPerSecond(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	at := func(millis ...int) []time.Time {
		var ts []time.Time
		for _, m := range millis {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	for name, c := range map[string]struct {
		times []time.Time
		want  float64
	}{
		"no arrivals give no rate":                            {nil, 0},
		"one arrival is one a second":                         {at(0), 1},
		"arrivals within a second all count":                  {at(0, 100, 999), 3},
		"an arrival a whole second later starts a new window": {at(0, 1000), 1},
		"the busiest second wins, wherever it starts":         {at(0, 1500, 1600, 1700, 2400, 3000), 4},
		"arrivals out of order are counted as if sorted":      {at(2400, 1500, 0, 1700, 1600), 4},
		"a steady 50 a second over 3 seconds peaks at 50":     {steady(20, 150), 50},
	} {
		t.Run(name, func(t *testing.T) {
			if got := PeakPerSecond(c.times); got != c.want {
				t.Errorf("PeakPerSecond = %g, want %g", got, c.want)
			}
		})
	}
}

// steady is n times, one each millis milliseconds.
func steady(millis, n int) []time.Time {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	ts := make([]time.Time, n)
	for i := range ts {
		ts[i] = t0.Add(time.Duration(i*millis) * time.Millisecond)
	}
	return ts
}
