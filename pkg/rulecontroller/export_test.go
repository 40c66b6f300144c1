package rulecontroller

import "time"

// SetFightBackoff makes the first round of a fight last d, until restore.
func SetFightBackoff(d time.Duration) (restore func()) {
	was := fightBackoff
	fightBackoff = d
	return func() { fightBackoff = was }
}
