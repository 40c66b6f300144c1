package controller

import "time"

// SetHeldElsewhereRetry sets how soon a write left to the replica holding
// its bucket is tried again, for the test's length; tests that set it must
// not run in parallel.
func SetHeldElsewhereRetry(t interface{ Cleanup(func()) }, d time.Duration) {
	before := heldElsewhereRetry
	heldElsewhereRetry = d
	t.Cleanup(func() { heldElsewhereRetry = before })
}
