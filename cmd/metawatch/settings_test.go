package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/settings"
)

// The flags' defaults are settings.Defaults, value for value: a setting has
// one default, whether metawatch starts from its flags or a test or the
// bench from settings.Defaults.
func TestFlagDefaultsAreTheSettingsDefaults(t *testing.T) {
	got, want := defaultOptions(t).settings, settings.Defaults()
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(authority.Identity{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the flags' defaults differ from settings.Defaults (-Defaults +flags):\n%s", diff)
	}
}

// Each parse makes an identity of its own: two installations in one process
// (tests, the bench) never share the record of their writes.
func TestEachParseHasItsOwnIdentity(t *testing.T) {
	a, b := defaultOptions(t).settings.Identity, defaultOptions(t).settings.Identity
	if a == b {
		t.Fatal("two parses share one *authority.Identity")
	}
	if a.FieldManager != authority.DefaultFieldManager || a.Adopted != "" {
		t.Errorf("default identity = %q adopting %q, want %q adopting nothing", a.FieldManager, a.Adopted, authority.DefaultFieldManager)
	}
}

// The generations' stop budget is their share of --graceful-shutdown-timeout;
// 0 keeps the default, as it does for the manager's: a budget of 0 would
// stop every swap of generations ("writes in flight after 0s").
func TestCompleteSettingsShareTheShutdownTimeout(t *testing.T) {
	tests := map[string]struct {
		flag, want time.Duration
	}{
		"the default, 30s":    {flag: 30 * time.Second, want: shutdownBudget(30 * time.Second).generation},
		"a budget of its own": {flag: 10 * time.Second, want: shutdownBudget(10 * time.Second).generation},
		"0 keeps the default": {flag: 0, want: settings.Defaults().ShutdownTimeout},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := parseFlagsOn(t, "--config-file", "config.yaml", "--graceful-shutdown-timeout", tc.flag.String())
			s := completeSettings(&o, nil, shutdownBudget(o.manager.GracefulShutdownTimeout))
			if s.ShutdownTimeout != tc.want || s.ShutdownTimeout <= 0 {
				t.Errorf("ShutdownTimeout = %s, want %s", s.ShutdownTimeout, tc.want)
			}
			if s.Installation == "" {
				t.Error("no installation name")
			}
		})
	}
}
