package main

import "testing"

// --variant-max-pods takes the fanout scenario's variants as well as those
// of --variants, and nothing else.
func TestVariantMaxPodsKnowsTheFanOutVariants(t *testing.T) {
	for name, want := range map[string]bool{
		"typed-cache":            true,
		"metawatch":              true,
		"metawatch-bare-workers": true,
		"metawatch-qps50":        true,
		"bare":                   true,
		"typedcache":             false,
		"":                       false,
	} {
		if got := knownVariant(name); got != want {
			t.Errorf("knownVariant(%q) = %v, want %v", name, got, want)
		}
	}
	got := mustVariantMaxPods("metawatch-bare-workers=10000,typed-cache=100000")
	if got["metawatch-bare-workers"] != 10000 || got["typed-cache"] != 100000 || len(got) != 2 {
		t.Errorf("mustVariantMaxPods = %v, want both entries", got)
	}
}
