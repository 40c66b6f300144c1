package check

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The report counts each object with an OwnershipFight Event of the last
// hour once, whatever the number of its Events, and names a few.
func TestTheReportCountsRecentFightsOncePerObject(t *testing.T) {
	now := time.Unix(10_000, 0)
	event := func(kind, name string, ago time.Duration) *eventsv1.Event {
		return &eventsv1.Event{Regarding: corev1.ObjectReference{Kind: kind, Namespace: "shop", Name: name},
			EventTime: metav1.NewMicroTime(now.Add(-ago)), Note: "rule mark sets label team, and something else removed it"}
	}
	f := Fights{Objects: map[string]int{}}
	seen := map[string]bool{}
	for _, e := range []*eventsv1.Event{
		event("Pod", "web-1", time.Minute), event("Pod", "web-1", 2*time.Minute), event("Pod", "web-2", 59*time.Minute),
		event("Pod", "web-3", 2*time.Hour), event("Deployment", "web", time.Second),
	} {
		f.add(e, now, seen)
	}
	if f.Objects["Pod"] != 2 || f.Objects["Deployment"] != 1 {
		t.Errorf("objects %v, want 2 Pods (one an hour ago no more) and 1 Deployment", f.Objects)
	}
	var out strings.Builder
	if err := f.write(&out); err != nil || !strings.Contains(out.String(), "ownership fights: 2 Pod objects") || !strings.Contains(out.String(), "Pod shop/web-1: rule mark") {
		t.Errorf("report:\n%s", out.String())
	}
}
