package stats

import "slices"

// Percentile is the p-th percentile (0..100) of values: the value at rank
// p/100 of the way from the lowest to the highest (rounded down, no
// interpolation), 0 for no values.
func Percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(values))
	i := int(p / 100 * float64(len(sorted)-1))
	return sorted[i]
}
