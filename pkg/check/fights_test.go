package check

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metawatch/metawatch/pkg/eventdigest"
)

// The report adds up the aggregate OwnershipFight Events of the last hour
// per kind of the objects they count (a series counting as its length, an
// Event listed twice once), and names a few.
func TestTheReportCountsRecentFightsPerKind(t *testing.T) {
	now := time.Unix(10_000, 0)
	event := func(name, kind string, count int32, ago time.Duration) *eventsv1.Event {
		e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: map[string]string{eventdigest.AnnotationKind: kind}},
			Regarding: corev1.ObjectReference{Kind: "Namespace", Namespace: "shop", Name: "shop"},
			EventTime: metav1.NewMicroTime(now.Add(-ago)), Note: "rule mark: something else undid its writes; e.g. web-1 (sets label team, removed)"}
		if count > 1 {
			e.Series = &eventsv1.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(now.Add(-ago))}
		}
		return e
	}
	f := Fights{Objects: map[string]int{}}
	seen := map[string]bool{}
	for _, e := range []*eventsv1.Event{
		event("shop.1", "Pod", 3, time.Minute), event("shop.1", "Pod", 3, time.Minute), event("shop.2", "Pod", 1, 59*time.Minute),
		event("shop.3", "Pod", 5, 2*time.Hour), event("shop.4", "Deployment", 1, time.Second),
	} {
		f.add(e, now, seen)
	}
	if f.Objects["Pod"] != 4 || f.Objects["Deployment"] != 1 {
		t.Errorf("objects %v, want 4 on Pods (a series of 3 and one; one two hours ago no more) and 1 on Deployments", f.Objects)
	}
	var out strings.Builder
	if err := f.write(&out); err != nil || !strings.Contains(out.String(), "ownership fights: 4 on Pod objects") || !strings.Contains(out.String(), "Namespace shop: rule mark") {
		t.Errorf("report:\n%s", out.String())
	}
}
