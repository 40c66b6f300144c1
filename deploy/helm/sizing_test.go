package helm_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/pkg/sizing"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// sizing.expectedObjects sets the memory request and limit to what
// pkg/sizing recommends (the chart does the same arithmetic in its
// templates), keeps the CPU request, and passes the computed limit on to the
// GC; without it the resources are as given.
func TestSizingSetsTheMemoryFromTheExpectedObjects(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, tc := range map[string]struct {
		objects     int64
		set         []string
		wantRequest string
		wantLimit   string
	}{
		"unset: the resources as given":          {wantRequest: "128Mi", wantLimit: "1Gi"},
		"ten thousand objects: the floors":       {objects: 10_000},
		"a hundred thousand":                     {objects: 100_000},
		"three hundred thousand":                 {objects: 300_000},
		"a million":                              {objects: 1_000_000},
		"past the measured: the same arithmetic": {objects: 7_654_321},
		"with no limit given, one is set":        {objects: 1_000_000, set: []string{"--set", "resources.limits=null"}},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"template", "metawatch", chart, "--show-only", "templates/deployment.yaml", "--set", fmt.Sprintf("sizing.expectedObjects=%d", tc.objects)}
			var d appsv1.Deployment
			if err := yaml.Unmarshal([]byte(helm(t, append(args, tc.set...)...)), &d); err != nil {
				t.Fatal(err)
			}
			c := d.Spec.Template.Spec.Containers[0]
			if tc.objects > 0 {
				want := sizing.For(tc.objects)
				tc.wantRequest, tc.wantLimit = want.Request(), want.Limit()
			}
			request, limit := c.Resources.Requests.Memory(), c.Resources.Limits.Memory()
			if request.Cmp(resource.MustParse(tc.wantRequest)) != 0 || limit.Cmp(resource.MustParse(tc.wantLimit)) != 0 || c.Resources.Requests.Cpu().String() != "100m" {
				t.Errorf("resources %v, want memory request %s, limit %s and the CPU request 100m", c.Resources, tc.wantRequest, tc.wantLimit)
			}
			if !strings.Contains(strings.Join(c.Args, " "), "--container-memory-limit=$(CONTAINER_MEMORY_LIMIT)") {
				t.Errorf("args %v: want the GC paced by the memory limit", c.Args)
			}
		})
	}
}
