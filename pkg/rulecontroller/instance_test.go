package rulecontroller_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/apiserver"
	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
	"github.com/metawatch/metawatch/pkg/wire"
)

// tuning is what a test sets of an instance: the operator's settings (nil:
// instanceDefaults) and a generation's wiring.
type tuning struct {
	Settings *settings.Settings
	rulecontroller.Wiring
}

// tuned is the tuning of instanceDefaults as change sets them.
func tuned(change func(*settings.Settings)) tuning {
	s := instanceDefaults()
	change(s)
	return tuning{Settings: s}
}

// gated is the tuning of a replica whose writes pass gate, in mode, with
// share (sharded) as its part of the objects.
func gated(mode authority.Mode, gate authority.ShardGate, share rulecontroller.Share) tuning {
	t := tuned(func(s *settings.Settings) { s.MaxConcurrentReconciles, s.Mode = 4, mode })
	t.Guard.Gate, t.Share = gate, share
	return t
}

// instance is an in-process metawatch on the test control plane.
type instance struct {
	writes atomic.Int64 // PATCH, PUT, POST and DELETE requests, Events excepted
	// podEventsBefore is metawatch_events_total{kind=Pod,verdict=passed} before it started.
	podEventsBefore float64
	stop            func()
	cache           client.Reader
}

// startInstance runs metawatch with configYAML until the test ends or stop is called.
func startInstance(t *testing.T, configYAML string, opts tuning) *instance {
	t.Helper()
	return startInstanceVia(t, configYAML, opts, nil)
}

// startInstanceVia is startInstance with wrap (if not nil) around its client config.
func startInstanceVia(t *testing.T, configYAML string, opts tuning, wrap func(*rest.Config) *rest.Config) *instance {
	t.Helper()
	return startInstanceWith(t, configYAML, opts, metamanager.Options{}, wrap)
}

// startInstanceWith is startInstanceVia with the manager's options mopts. The
// controllers get the newest resourceVersions the cache's streams saw, as a
// generation's do, unless opts.Versions is set.
func startInstanceWith(t *testing.T, configYAML string, opts tuning, mopts metamanager.Options, wrap func(*rest.Config) *rest.Config) *instance {
	t.Helper()
	conf, err := config.Parse([]byte(configYAML))
	if err != nil {
		t.Fatal(err)
	}
	watches, _, err := apiserver.Resolve(cp.Config, conf)
	if err != nil {
		t.Fatal(err)
	}
	rulesByKind, err := rules.Compile(conf)
	if err != nil {
		t.Fatal(err)
	}
	inst := &instance{podEventsBefore: podEventsPassed(t)}
	cfg := inst.countWrites(cp.Config)
	if wrap != nil {
		cfg = wrap(cfg)
	}
	mopts.MetricsBindAddress = "0"
	if opts.Settings == nil {
		opts.Settings = instanceDefaults()
	}
	// The cache keeps the entries of the names the controllers write as and adopt from.
	mopts.Identity = opts.Settings.Identity
	if mopts.Versions == nil {
		mopts.Versions = wire.NewResourceVersions()
	}
	if opts.Versions == nil {
		opts.Versions = mopts.Versions
	}
	mgr, err := metamanager.New(cfg, watches, mopts)
	if err != nil {
		t.Fatal(err)
	}
	if err := rulecontroller.Setup(mgr, watches, rulesByKind, opts.Settings, opts.Wiring); err != nil {
		t.Fatal(err)
	}
	inst.stop, inst.cache = testkit.Start(t, mgr), mgr.GetCache()
	return inst
}

// waitCached waits until the instance's cache holds n pods in namespaces and
// its controller has received their creates (its initial list is done;
// creates that need no work are not reconciled, so reconciles cannot tell).
func waitCached(t *testing.T, inst *instance, namespaces []string, n int) {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("the cache to hold %d pods", n), testkit.Timeout, func() bool {
		total := 0
		for _, ns := range namespaces {
			list := metacache.NewList(corev1.SchemeGroupVersion.WithKind("Pod"))
			if err := inst.cache.List(t.Context(), list, client.InNamespace(ns)); err != nil {
				return false
			}
			total += len(list.Items)
		}
		return total == n && podEventsPassed(t)-inst.podEventsBefore >= float64(n)
	})
}

func podEventsPassed(t *testing.T) float64 {
	return testkit.Metric(t, "metawatch_events_total", map[string]string{"kind": "Pod", "verdict": "passed"})
}

// countWrites counts every write request the instance makes, but Events.
func (inst *instance) countWrites(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && !strings.Contains(req.URL.Path, "/events") {
				inst.writes.Add(1)
			}
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// instanceDefaults are the instances' settings unless a test sets its own:
// the defaults, with every kind the tests' rules write writable.
func instanceDefaults() *settings.Settings {
	s := settings.Defaults()
	s.Guardrails.WritableKinds = []string{"*", "Namespace", "Node"}
	return &s
}
