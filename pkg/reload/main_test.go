package reload_test

import (
	"os"
	"testing"
	"time"

	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	reload.ForbiddenRecheckInterval = time.Second
	os.Exit(controlplane.RunTests(m, &cp))
}
