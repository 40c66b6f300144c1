package authority_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/metawatch/metawatch/pkg/authority"
)

// lock is a leader-election lock whose writes fail with err.
type lock struct {
	resourcelock.Interface
	err error
}

func (l *lock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *lock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.err }
func (l *lock) Identity() string                                                { return "me" }

func TestLeaderClaimFollowsSuccessfulWritesNamingThisReplica(t *testing.T) {
	const renewDeadline = 10 * time.Second
	failed := errors.New("the Lease write failed")
	type write struct {
		create bool
		holder string
		err    error
	}
	tests := map[string]struct {
		writes []write
		want   bool // a claim
	}{
		"no write yet: no claim":                          {nil, false},
		"an acquisition starts it":                        {[]write{{create: true, holder: "me"}}, true},
		"a renewal starts it":                             {[]write{{holder: "me"}}, true},
		"a failed renewal leaves it as it was (none)":     {[]write{{holder: "me", err: failed}}, false},
		"a failed renewal leaves it as it was (running)":  {[]write{{holder: "me"}, {holder: "me", err: failed}}, true},
		"a release ends it":                               {[]write{{holder: "me"}, {holder: ""}}, false},
		"a record naming another replica ends it":         {[]write{{holder: "me"}, {holder: "other"}}, false},
		"an acquisition that failed starts nothing":       {[]write{{create: true, holder: "me", err: failed}}, false},
		"a release that failed leaves the claim as it is": {[]write{{holder: "me"}, {holder: "", err: failed}}, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l := &lock{}
			claim := authority.NewLeaderClaim(l, renewDeadline)
			var lastOK time.Time
			for _, w := range tc.writes {
				l.err = w.err
				before := time.Now()
				record := resourcelock.LeaderElectionRecord{HolderIdentity: w.holder}
				if w.create {
					_ = claim.Create(t.Context(), record)
				} else {
					_ = claim.Update(t.Context(), record)
				}
				if w.err == nil {
					lastOK = before
				}
			}
			until, ok := claim.Until("")
			if ok != tc.want {
				t.Fatalf("claim after %+v: %v, want %v", tc.writes, ok, tc.want)
			}
			if ok && (until.Before(lastOK.Add(renewDeadline)) || until.After(time.Now().Add(renewDeadline))) {
				t.Errorf("claim until %s, want the renew deadline after the last successful write was sent (%s)", until, lastOK.Add(renewDeadline))
			}
		})
	}
}
