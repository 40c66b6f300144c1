package rulecontroller

import (
	"time"

	"github.com/metawatch/metawatch/pkg/settings"
)

// SetFightBackoff makes the first round of a fight last d, until restore.
func SetFightBackoff(d time.Duration) (restore func()) {
	was := fightBackoff
	fightBackoff = d
	return func() { fightBackoff = was }
}

// defaultSettings are the settings of a process given no flag.
func defaultSettings() *settings.Settings {
	s := settings.Defaults()
	return &s
}
