package reload_test

import (
	"os"
	"testing"
	"time"

	"github.com/metawatch/metawatch/pkg/controlplane"
	"github.com/metawatch/metawatch/pkg/reload"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	reload.ForbiddenRecheckInterval = time.Second
	os.Exit(controlplane.RunTests(m, &cp))
}
