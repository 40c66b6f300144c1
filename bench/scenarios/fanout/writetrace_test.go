package fanout

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestFillWritten(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(seconds ...float64) []time.Time {
		var out []time.Time
		for _, s := range seconds {
			out = append(out, start.Add(time.Duration(s*float64(time.Second))))
		}
		return out
	}
	for name, c := range map[string]struct {
		seconds  []int
		arrivals []time.Time
		want     []int
	}{
		"each second's arrivals go to the sample that closes it": {
			seconds: []int{1, 2, 3}, arrivals: at(0.1, 0.9, 1.0, 2.5, 2.99), want: []int{2, 1, 2},
		},
		"a second a scrape missed counts in the next sample": {
			seconds: []int{1, 3}, arrivals: at(0.5, 1.5, 2.5), want: []int{1, 2},
		},
		"nothing arrived, nothing written": {
			seconds: []int{1, 2}, want: []int{0, 0},
		},
	} {
		t.Run(name, func(t *testing.T) {
			samples := make([]WriteSample, len(c.seconds))
			for i, s := range c.seconds {
				samples[i].Second = s
			}
			fillWritten(samples, start, c.arrivals)
			var got []int
			for _, s := range samples {
				got = append(got, s.Written)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("written %v, want %v", got, c.want)
			}
		})
	}
}

// Whatever seconds were sampled, the samples count every arrival before
// the last one's second once, and none after it.
func FuzzFillWrittenCountsEachArrivalOnce(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint16(300))
	f.Fuzz(func(t *testing.T, seed uint64, samples uint8, arrivals uint16) {
		r := rand.New(rand.NewPCG(seed, seed))
		start := time.Unix(0, 0)
		var trace []WriteSample
		second := 0
		for range int(samples) {
			second += 1 + r.IntN(3) // a missed scrape now and then
			trace = append(trace, WriteSample{Second: second})
		}
		var times []time.Time
		before := 0
		for range int(arrivals) {
			d := time.Duration(r.Int64N(int64(second+2) * int64(time.Second)))
			times = append(times, start.Add(d))
			if d < time.Duration(second)*time.Second {
				before++
			}
		}
		fillWritten(trace, start, times)
		total := 0
		for _, s := range trace {
			total += s.Written
		}
		if total != before {
			t.Errorf("the samples count %d arrivals, want the %d before second %d", total, before, second)
		}
	})
}
