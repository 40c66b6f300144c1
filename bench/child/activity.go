package child

import "strings"

// Activity is what a variant did during a scenario: the difference of two
// snapshots.
type Activity struct {
	Events     int64            `json:"events"`
	Reconciles int64            `json:"reconciles"`
	Writes     int64            `json:"writes"`
	CPUSeconds float64          `json:"cpuSeconds"`
	Received   map[string]int64 `json:"receivedBytesByKey"`
}

// ReconcilesPerEvent is reconciles over events, 0 without events.
func (a Activity) ReconcilesPerEvent() float64 {
	if a.Events == 0 {
		return 0
	}
	return float64(a.Reconciles) / float64(a.Events)
}

// ActivityBetween is what the child did between two snapshots.
func ActivityBetween(before, after Snapshot) Activity {
	a := Activity{Events: after.Events - before.Events, Reconciles: after.Reconciles - before.Reconciles,
		CPUSeconds: after.CPUSeconds - before.CPUSeconds, Received: map[string]int64{}}
	for key, n := range after.Requests {
		if strings.HasPrefix(key, "PATCH pods ") {
			a.Writes += n - before.Requests[key]
		}
	}
	for key, n := range after.Bytes {
		if d := n - before.Bytes[key]; d > 0 {
			a.Received[key] = d
		}
	}
	return a
}
