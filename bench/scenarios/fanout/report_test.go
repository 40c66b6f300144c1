package fanout

import "testing"

func TestNewProbeWindow(t *testing.T) {
	w := NewProbeWindow([]float64{4, 2, 30, 3}, 1)
	if w.Requests != 4 || w.Errors != 1 || w.P50Millis != 3 || w.P99Millis != 4 || w.MaxMillis != 30 {
		t.Errorf("NewProbeWindow = %+v, want 4 requests, 1 error, p50 3, p99 4 (rank rounded down), max 30", w)
	}
}
