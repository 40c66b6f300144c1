package informer_test

import (
	"os"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// Only the logging handler: the other sleeps to space errors out, by a
	// time taken outside synctest's bubbles, so for years of a bubble's.
	utilruntime.ErrorHandlers = utilruntime.ErrorHandlers[:1]
	os.Exit(controlplane.RunTests(m, &cp))
}
