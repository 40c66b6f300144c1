package stats

import "testing"

func TestPercentile(t *testing.T) {
	for name, c := range map[string]struct {
		values []float64
		p      float64
		want   float64
	}{
		"no values give 0":                                         {nil, 99, 0},
		"one value is every percentile":                            {[]float64{7}, 99, 7},
		"the 50th of an odd count is the middle one":               {[]float64{3, 1, 2}, 50, 2},
		"the 0th is the lowest and the 100th the highest":          {[]float64{5, 1, 9}, 100, 9},
		"the 99th of a hundred is rounded down to the 99th value":  {hundred(), 99, 99},
		"the 99th of fifty, a rank short of the last, is the 49th": {hundred()[:50], 99, 49},
		"the order the values came in does not matter":             {[]float64{9, 3, 7, 1, 5}, 50, 5},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Percentile(c.values, c.p); got != c.want {
				t.Errorf("Percentile(%v, %g) = %g, want %g", c.values, c.p, got, c.want)
			}
		})
	}
}

// hundred is 1..100.
func hundred() []float64 {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(i + 1)
	}
	return v
}
