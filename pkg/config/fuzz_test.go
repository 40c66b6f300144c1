package config_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/pkg/config"
)

// FuzzParse checks that Parse never panics, and that whatever it accepts is
// valid and survives a round trip: what users read back is what runs.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"watches:\n- kind: Pod\n",
		"watches:\n- kind: Pod\n  namespaces: [shop]\n  labelSelector: app=web\n  fieldSelector: status.phase!=Succeeded\n",
		"watches:\n- kind: Deployment\n  apiVersion: apps/v1\n- kind: Node\n  labelSelector: '!node-role.kubernetes.io/control-plane'\n",
		"watches:\n- kind: Pod\n  labelSelector: team in (a\n",
		"watches: [{kind: Pod}, {kind: Pod}]\n",
		"watches:\n- kind: Pod\n  namespaces: [Not_A_Namespace]\n",
		"{}", "", "- a\n", "watches: 3\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data)
		if err != nil {
			return
		}
		if errs := config.Validate(c); len(errs) > 0 {
			t.Fatalf("Parse accepted a configuration Validate rejects: %v", errs)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshalling an accepted configuration: %v", err)
		}
		again, err := config.Parse(out)
		if err != nil {
			t.Fatalf("an accepted configuration does not parse after a round trip: %v\n%s", err, out)
		}
		if !equality.Semantic.DeepEqual(c, again) {
			t.Fatalf("round trip changed the configuration:\n%+v\n%+v", c, again)
		}
	})
}
