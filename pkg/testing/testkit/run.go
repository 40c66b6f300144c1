package testkit

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/apiserver"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/eventdigest"
)

// Start runs r (a Manager) until the test ends or stop is called, and fails
// the test if it ends with an error. stop waits for r to return; calling it
// again does nothing.
func Start(t testing.TB, r interface{ Start(context.Context) error }) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%T: %v", r, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Resolve parses configYAML and resolves it against the cluster cfg points at.
func Resolve(t testing.TB, cfg *rest.Config, configYAML string) []config.ResolvedWatch {
	t.Helper()
	conf, err := config.Parse([]byte(configYAML))
	if err != nil {
		t.Fatalf("parsing config: %v", err)
	}
	watches, _, err := apiserver.Resolve(cfg, conf)
	if err != nil {
		t.Fatalf("resolving config: %v", err)
	}
	return watches
}

// Events lists the events.k8s.io Events in ns about the object kind/name with reason.
func Events(t testing.TB, c client.Client, ns, kind, name, reason string) []eventsv1.Event {
	t.Helper()
	return listEvents(t, c, ns, func(e eventsv1.Event) bool {
		return e.Reason == reason && e.Regarding.Kind == kind && e.Regarding.Name == name
	})
}

// AggregateEvents lists metawatch's aggregate Events in ns with reason
// about rule (package eventdigest: one per reason, rule, kind and
// namespace, regarding the Namespace, or for cluster-scoped objects the
// selectors ConfigMap), by their annotation naming the rule; rule ""
// matches every one.
func AggregateEvents(t testing.TB, c client.Client, ns, reason, rule string) []eventsv1.Event {
	t.Helper()
	return listEvents(t, c, ns, func(e eventsv1.Event) bool {
		return e.Reason == reason && e.ReportingController == eventdigest.EventSource &&
			(rule == "" || e.Annotations[eventdigest.AnnotationRule] == rule)
	})
}

// listEvents lists the events.k8s.io Events in ns that keep keeps.
func listEvents(t testing.TB, c client.Client, ns string, keep func(eventsv1.Event) bool) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// Occurrences is how many objects the aggregate Events count: each one's
// series count, or 1 for one without a series.
func Occurrences(events []eventsv1.Event) int {
	n := 0
	for _, e := range events {
		if e.Series != nil {
			n += int(e.Series.Count)
		} else {
			n++
		}
	}
	return n
}

// MergePatch patches obj with a JSON merge patch as field manager manager, the way kubectl label does.
func MergePatch(t testing.TB, c client.Client, obj client.Object, manager, patch string) {
	t.Helper()
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

// KubectlApply runs `kubectl apply -f -` with manifest, as a user would; safe
// to call from any goroutine.
func KubectlApply(kubectl, kubeconfig, manifest string) error {
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply: %w\n%s\n%s", err, out, manifest)
	}
	return nil
}

// DeleteAtCleanup deletes obj when the test ends, failing it if that does
// not work: t.Context() is cancelled by then, and an object a test leaves
// (an admission policy that labels every new pod) changes the tests after it.
func DeleteAtCleanup(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	t.Cleanup(func() {
		if err := client.IgnoreNotFound(c.Delete(context.WithoutCancel(t.Context()), obj)); err != nil {
			t.Errorf("deleting %s %s at the end of the test: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	})
}
