package reload_test

import (
	"os"
	"testing"
	"time"

	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	reload.ForbiddenRecheckInterval = time.Second
	// A pair whose owner went is reported at the next resync, a minute
	// later by default (TestPairsGoWithTheirOwner waited it out).
	reload.AdmissionResync = 2 * time.Second
	eventdigest.DefaultInterval = time.Second                                          // aggregate Events within a second, not 30
	reports.DefaultInterval, reports.DefaultPoll = 2*time.Second, 200*time.Millisecond // reports too, not a minute
	os.Exit(controlplane.RunTests(m, &cp))
}
