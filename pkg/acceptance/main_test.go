package acceptance_test

import (
	"os"
	"testing"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }
