package authority_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// until is a claim on every object that ends at a fixed moment.
type until time.Time

func (u until) Until(types.UID) (time.Time, bool) { return time.Time(u), true }

// sentAt records when each request left the client, below the fence.
type sentAt struct {
	mu    sync.Mutex
	times []time.Time
}

func (s *sentAt) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			s.mu.Lock()
			s.times = append(s.times, time.Now())
			s.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Six writes admitted at once under a claim that ends 1.5 s later queue in
// a client limited to one request a second: those whose turn comes after
// the claim's end are not sent (admission is not sending), and none of them
// reaches the server. One sent in time but not answered before the claim's
// end is given up (context deadline exceeded), whether or not it landed.
func TestAWriteIsSentOnlyWhileItsClaimHolds(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fenced-writes"}}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	sent := &sentAt{}
	cfg := authority.Wrap(sent.wrap(cp.Config))
	cfg.RateLimiter, cfg.QPS, cfg.Burst = nil, 1, 1
	cs := kubernetes.NewForConfigOrDie(cfg)
	claim := until(time.Now().Add(1500 * time.Millisecond))

	var wg sync.WaitGroup
	results := make([]error, 6)
	for i := range results {
		ctx, err := authority.Admit(t.Context(), claim, "")
		if err != nil {
			t.Fatalf("write %d refused at admission, with its claim valid: %v", i, err)
		}
		wg.Go(func() {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"write-%d":"sent"}}}`, i)
			_, results[i] = cs.CoreV1().ConfigMaps("default").Patch(ctx, cm.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		})
	}
	wg.Wait()

	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "default", Name: cm.Name}, cm); err != nil {
		t.Fatal(err)
	}
	written, fenced := 0, 0
	for i, err := range results {
		_, landed := cm.Annotations[fmt.Sprintf("write-%d", i)]
		switch {
		case err == nil && landed:
			written++
		case errors.Is(err, authority.ErrLapsed) && !landed:
			fenced++
		case errors.Is(err, context.DeadlineExceeded):
			written++ // sent in time, answered too late (a loaded machine)
		default:
			t.Errorf("write %d: error %v, landed %v; want it written, or refused with ErrLapsed and not landed", i, err, landed)
		}
	}
	for _, at := range sent.times {
		if at.After(time.Time(claim)) {
			t.Errorf("a request left the client at %s, after its claim ended at %s", at.Format(time.StampMilli), time.Time(claim).Format(time.StampMilli))
		}
	}
	if written == 0 || fenced == 0 {
		t.Errorf("%d written and %d fenced, want some of each (1 request a second over a 1.5 s claim)", written, fenced)
	}
	t.Logf("%d writes sent within the claim, %d not sent once it had ended", written, fenced)
}

// A request held in the network ends when its claim does, not when the
// server answers: the client gives it up at the claim's end.
func TestARequestEndsWithItsClaim(t *testing.T) {
	controlplane.SkipIfShort(t)
	proxy := testkit.NewProxy(t, cp.Config)
	proxy.SetHold(func(*http.Request) time.Duration { return 3 * time.Second })
	cfg, err := clientcmd.BuildConfigFromFlags("", proxy.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(authority.Wrap(cfg))
	ctx, err := authority.Admit(t.Context(), until(time.Now().Add(500*time.Millisecond)), "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, "any", metav1.GetOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request held past its claim's end: %v, want it to end with the claim (context deadline exceeded)", err)
	}
}

// A claim whose end has passed admits nothing.
func TestAnEndedClaimAdmitsNothing(t *testing.T) {
	if _, err := authority.Admit(t.Context(), until(time.Now().Add(-time.Millisecond)), ""); !errors.Is(err, authority.ErrLapsed) {
		t.Errorf("Admit under an ended claim: %v, want ErrLapsed", err)
	}
}
