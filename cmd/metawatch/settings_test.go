package main

import (
	"testing"

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
