package sizing

import "testing"

func TestFor(t *testing.T) {
	cases := map[string]struct {
		objects int64
		want    Resources
	}{
		"no objects get the floors":               {0, Resources{RequestMiB: 64, LimitMiB: 256}},
		"a negative count is taken for none":      {-5, Resources{RequestMiB: 64, LimitMiB: 256}},
		"ten thousand objects: the limit's floor": {10_000, Resources{RequestMiB: 80, LimitMiB: 256}},
		"a hundred thousand":                      {100_000, Resources{RequestMiB: 128, LimitMiB: 256}},
		"a million: the limit over the peak":      {1_000_000, Resources{RequestMiB: 560, LimitMiB: 1280}},
		"five million, past what was measured":    {5_000_000, Resources{RequestMiB: 2512, LimitMiB: 6080}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := For(tc.objects); got != tc.want {
				t.Errorf("For(%d) = %+v, want %+v", tc.objects, got, tc.want)
			}
		})
	}
}

// The recommendation grows with the count and always leaves the limit
// above the modelled peak and the request at least the modelled steady set.
func FuzzFor(f *testing.F) {
	for _, n := range []int64{0, 1, 10_000, 1_000_000, 1 << 40} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		n = max(0, n%(1<<40))
		r, more := For(n), For(n+1000)
		if more.RequestMiB < r.RequestMiB || more.LimitMiB < r.LimitMiB {
			t.Fatalf("For(%d) = %+v but For(%d) = %+v: want no less for more objects", n, r, n+1000, more)
		}
		if r.LimitMiB*(1<<20) < BaseMiB*(1<<20)+n*PeakBytesPerObject || r.RequestMiB*(1<<20) < BaseMiB*(1<<20)+n*SteadyBytesPerObject {
			t.Fatalf("For(%d) = %+v: want the request at least the steady set and the limit above the peak", n, r)
		}
		if r.LimitMiB%64 != 0 || r.RequestMiB%16 != 0 {
			t.Fatalf("For(%d) = %+v: want whole steps of 16Mi and 64Mi", n, r)
		}
	})
}
