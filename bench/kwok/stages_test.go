package kwok

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/bench/seed"
)

// The stage documents kwok is given parse strictly as YAML, and the probe
// stage selects Running pods of its namespace only, within its period.
func TestStagesAreValidYAML(t *testing.T) {
	docs := strings.Split(defaultStages+probeStage("metawatch-bench-000", 2500*time.Millisecond), "\n---\n")
	names := map[string]map[string]any{}
	for _, doc := range docs {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" || !strings.Contains(doc, "kind: Stage") {
			continue
		}
		var stage map[string]any
		if err := yaml.UnmarshalStrict([]byte(strings.TrimPrefix(doc, "---\n")), &stage); err != nil {
			t.Fatalf("stage does not parse: %v\n%s", err, doc)
		}
		names[stage["metadata"].(map[string]any)["name"].(string)] = stage["spec"].(map[string]any)
	}
	for _, want := range []string{"node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-delete", "metawatch-bench-probe"} {
		if names[want] == nil {
			t.Errorf("stage %s missing; have %v", want, names)
		}
	}
	probe := names["metawatch-bench-probe"]
	if delay := probe["delay"].(map[string]any); delay["jitterDurationMilliseconds"] != float64(2500) {
		t.Errorf("probe delay %v, want up to 2500 ms", delay)
	}
	selector := probe["selector"].(map[string]any)["matchExpressions"].([]any)
	if first := selector[0].(map[string]any); first["key"] != ".metadata.namespace" || first["values"].([]any)[0] != "metawatch-bench-000" {
		t.Errorf("probe selector %v, want the namespace first", selector)
	}
}

func TestScheduleSpreadsPodsAndTolerates(t *testing.T) {
	k := &Kwok{nodes: []string{"a", "b", "c"}}
	tests := map[string]struct {
		i        int
		wantNode string
	}{
		"the first pod goes to the first node":    {0, "a"},
		"the third pod goes to the third node":    {2, "c"},
		"the fourth pod wraps to the first":       {3, "a"},
		"an app's next pod goes to the next node": {seed.AppsPerNamespace, "b"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := seed.Pod("ns", tc.i)
			k.Schedule(pod, tc.i)
			if pod.Spec.NodeName != tc.wantNode || pod.Spec.NodeSelector != nil || pod.Spec.SchedulerName != "" {
				t.Errorf("node %q, nodeSelector %v, scheduler %q; want node %q and neither of the others", pod.Spec.NodeName, pod.Spec.NodeSelector, pod.Spec.SchedulerName, tc.wantNode)
			}
			if !tolerates(pod.Spec.Tolerations, taint) {
				t.Errorf("tolerations %v do not tolerate the nodes' taint %v", pod.Spec.Tolerations, taint)
			}
		})
	}
}

func tolerates(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	for _, tol := range tolerations {
		if tol.ToleratesTaint(logr.Discard(), &taint, false) {
			return true
		}
	}
	return false
}
