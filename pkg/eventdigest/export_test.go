package eventdigest

import "time"

// SetClock makes d read the time from now.
func (d *Digest) SetClock(now func() time.Time) { d.now = now }
