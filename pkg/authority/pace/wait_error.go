package pace

import (
	"fmt"
	"time"
)

// WaitError is the error of a write the pacer did not send because it
// would have had to wait past its deadline: for a pause a 429 asked for
// (Pause), or for its turn at the write rate (Rate). Nothing was sent; the
// write may be tried again once Wait has passed (RetryIn), and
// authority.Classify reads it so (SendSoon), not as a failure.
type WaitError struct {
	// Wait is how long the write would have waited; Deadline, how long it
	// had until its deadline (less than Wait).
	Wait, Deadline time.Duration
	// Pause is the 429's pause the write would have waited for; nil: it
	// waited for the rate.
	Pause *Pause
	// Rate is the write rate, in writes per second, when it waited for it.
	Rate float64
}

// Pause is what a 429 asked of the writes.
type Pause struct {
	// Asked is the Retry-After the API server gave (0: none); Max, the cap
	// (--write-retry-after-max) the pause was cut to if Asked was longer.
	Asked, Max time.Duration
}

// RetryIn is how soon the write could leave: when the pause is over, or
// its turn at the rate comes.
func (e *WaitError) RetryIn() time.Duration { return e.Wait }

func (e *WaitError) Error() string {
	when := "once the pause is over"
	if e.Pause == nil {
		when = "once its turn comes"
	}
	return fmt.Sprintf("%s; %s: not sent, it is tried again %s", e.why(), e.deadline(), when)
}

// why is what holds the write, in the flags' words.
func (e *WaitError) why() string {
	p := e.Pause
	switch {
	case p == nil:
		return fmt.Sprintf("writes are held to %g a second (the write rate, which adapts to the API server between --write-rate-min and --write-rate-max): "+
			"this write's turn comes in %s", e.Rate, human(e.Wait))
	case p.Asked == 0:
		return fmt.Sprintf("the API server answered a write HTTP 429 without a Retry-After, which pauses writes for %s; the pause ends in %s",
			human(min(defaultRetryAfter, p.Max)), human(e.Wait))
	case p.Asked > p.Max:
		return fmt.Sprintf("the API server asked writes to pause for %s (HTTP 429 Retry-After), cut to %s by --write-retry-after-max; the pause ends in %s",
			human(p.Asked), human(p.Max), human(e.Wait))
	}
	return fmt.Sprintf("the API server asked writes to pause for %s (HTTP 429 Retry-After); the pause ends in %s", human(p.Asked), human(e.Wait))
}

func (e *WaitError) deadline() string {
	if e.Deadline <= 0 {
		return "this write's deadline has passed"
	}
	return "this write's deadline is in " + human(e.Deadline)
}

// human is d as a person reads it: to a tenth of a second from a second
// up, to the millisecond below.
func human(d time.Duration) string {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
