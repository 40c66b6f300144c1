package main

import (
	"strings"
	"testing"
	"time"
)

func TestBookmarkIntervalValid(t *testing.T) {
	cases := map[string]struct {
		interval time.Duration
		wantErr  string
	}{
		"the default is valid":           {interval: time.Second},
		"zero is a bookmark per event":   {interval: 0},
		"a negative interval is refused": {interval: -time.Second, wantErr: "--unchanged-bookmark-interval=-1s: want 0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := bookmarkIntervalValid(tc.interval)
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
