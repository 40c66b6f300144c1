package admission_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// BenchmarkPodCreate is what atCreation costs a create: the time of one pod
// create on the local API server in a namespace without a policy, and in
// one where a policy sets a key and copies two from the Namespace (three
// mutations, two match conditions).
//
//	go test ./pkg/admission -run XXX -bench PodCreate -benchtime 500x
func BenchmarkPodCreate(b *testing.B) {
	controlplane.SkipIfShort(b)
	c := testkit.Client(b, cp.Config)
	benchSetup.Do(func() { setUpPodCreate(b, c) })
	for _, ns := range []string{"bench-without", "bench-with"} {
		b.Run("namespace="+ns, func(b *testing.B) {
			for range b.N {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%d", benchPods.Add(1))},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}}
				if err := c.Create(b.Context(), pod); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var (
	benchSetup sync.Once
	benchPods  atomic.Int64
)

func setUpPodCreate(b *testing.B, c client.Client) {
	testkit.Namespace(b, c, "bench-without", map[string]string{"team": "red", "cost-center": "7"})
	testkit.Namespace(b, c, "bench-with", map[string]string{"team": "red", "cost-center": "7"})
	rule := admission.Rule{Name: "bench", Resources: []admission.Resource{pods}, SetLabels: map[string]string{"tier": "gold"},
		CopyLabels: []string{"team", "cost-center"}, Scopes: []*config.WriteScope{{Namespaces: []string{"bench-with"}}}}
	install(b, c, rule)
	testkit.WaitAdmitted(b, c, "bench-with", "team", nil)
}
