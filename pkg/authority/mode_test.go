package authority

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestResolveMode(t *testing.T) {
	for name, c := range map[string]struct {
		leaderElect, warmStandby, sharded bool
		want                              Mode
		wantErr                           string
	}{
		"no flag is a single replica":                   {want: Single},
		"--leader-elect is a leader":                    {leaderElect: true, want: Leader},
		"--leader-elect --warm-standby is warm standby": {leaderElect: true, warmStandby: true, want: WarmStandby},
		"--sharding is sharded":                         {sharded: true, want: Sharded},
		"--sharding with --leader-elect is refused":     {sharded: true, leaderElect: true, wantErr: "drop --leader-elect"},
		"--sharding with --warm-standby is refused":     {sharded: true, warmStandby: true, wantErr: "drop --warm-standby"},
		"--warm-standby alone is refused":               {warmStandby: true, wantErr: "--warm-standby needs --leader-elect"},
		"all three flags say both exclusions at once":   {leaderElect: true, warmStandby: true, sharded: true, wantErr: "drop --leader-elect"},
		"all three flags name --warm-standby too":       {leaderElect: true, warmStandby: true, sharded: true, wantErr: "drop --warm-standby"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ResolveMode(c.leaderElect, c.warmStandby, c.sharded)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("ResolveMode: %v, want %s", err, c.want)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("ResolveMode: %v, want an error saying %q", err, c.wantErr)
			case c.wantErr == "" && got != c.want:
				t.Fatalf("ResolveMode = %s, want %s", got, c.want)
			}
		})
	}
}

// Each mode's questions agree with its table in the Mode doc.
func TestModeQuestions(t *testing.T) {
	for m, want := range map[Mode]struct{ elects, every, leases bool }{
		Single:      {},
		Leader:      {elects: true, leases: true},
		WarmStandby: {elects: true, every: true, leases: true},
		Sharded:     {every: true, leases: true},
	} {
		if got := (struct{ elects, every, leases bool }{m.ElectsLeader(), m.EveryReplicaRuns(), m.HasLeases()}); got != want {
			t.Errorf("%s: elects leader, every replica runs, has leases = %+v, want %+v", m, got, want)
		}
	}
}

type claimUntil time.Time

func (c claimUntil) Until(types.UID) (time.Time, bool) { return time.Time(c), true }

type ringStub struct{ claimUntil }

func (ringStub) Begin(types.UID) (func(), bool) { return func() {}, true }
func (ringStub) Pending(types.UID) bool         { return false }

func TestModeGuard(t *testing.T) {
	fence, leader, ring := NewWriteFence(), claimUntil(time.Now()), ringStub{}
	for name, c := range map[string]struct {
		mode      Mode
		fence     *WriteFence
		leader    Claim
		ring      Ring
		wantClaim Claim
		wantGate  bool
		wantErr   bool
	}{
		"single writes behind its fence alone":         {mode: Single, fence: fence},
		"a leader writes under its Lease":              {mode: Leader, fence: fence, leader: leader, wantClaim: leader},
		"a warm standby writes under the Lease":        {mode: WarmStandby, fence: fence, leader: leader, wantClaim: leader},
		"sharded writes through the ring":              {mode: Sharded, fence: fence, ring: ring, wantClaim: ring, wantGate: true},
		"a leader without its claim is refused":        {mode: Leader, fence: fence, wantErr: true},
		"sharded without the ring is refused":          {mode: Sharded, fence: fence, wantErr: true},
		"a single replica with a leader claim refused": {mode: Single, fence: fence, leader: leader, wantErr: true},
		"a leader with a ring is refused":              {mode: Leader, fence: fence, leader: leader, ring: ring, wantErr: true},
		"no fence is refused":                          {mode: Single, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			g, err := c.mode.Guard(c.fence, c.leader, c.ring)
			if (err != nil) != c.wantErr {
				t.Fatalf("Guard: %v, want error: %v", err, c.wantErr)
			}
			if err != nil {
				return
			}
			if g.Fence != c.fence || g.Claim != c.wantClaim || (g.Gate != nil) != c.wantGate {
				t.Errorf("Guard = %+v, want fence %p, claim %v, gate: %v", g, c.fence, c.wantClaim, c.wantGate)
			}
		})
	}
}
