package reload

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
)

// A warm standby's generation whose stop has begun never opens, even when
// this replica comes to lead while the swap that stops it is under way (the
// election noticed just before the stop, the opener then waiting for the
// Reloader's lock): a stopped generation would publish its metrics again.
func TestAHeldGenerationNeverOpensOnceItStops(t *testing.T) {
	elected := make(chan struct{})
	r := &Reloader{elected: elected, Log: logr.Discard()}
	g := &generation{number: 1, gate: make(chan struct{}), stopping: make(chan struct{}), done: make(chan error, 1),
		counts: &metacache.ObjectCounts{}, audits: rulecontroller.NewAudits(false), fence: authority.NewWriteFence(), cancel: func() {}}
	g.done <- nil
	r.current = g
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if r.openWhenLeading(ctx, g) {
		t.Fatal("opened before this replica leads")
	}
	r.mu.Lock() // held, as by Ready, while the election completes and the swap stops g
	close(elected)
	time.Sleep(50 * time.Millisecond)
	if stopped, err := g.stop(time.Second); !stopped || err != nil {
		t.Fatal(stopped, err)
	}
	r.mu.Unlock()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-g.gate:
		t.Error("generation 1 opened after its stop had begun")
	default:
	}
}
