package config_test

import (
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
)

func TestMetadataMapPicksItsMapAndNamesIt(t *testing.T) {
	labels, annotations := map[string]string{"l": "1"}, map[string]string{"a": "2"}
	tests := map[string]struct {
		m          config.MetadataMap
		key, value string
		plural     string
	}{
		"labels are read from the labels":           {m: config.Labels, key: "l", value: "1", plural: "labels"},
		"annotations are read from the annotations": {m: config.Annotations, key: "a", value: "2", plural: "annotations"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.m.Of(labels, annotations)[tc.key]; got != tc.value {
				t.Errorf("Of()[%q] = %q, want %q", tc.key, got, tc.value)
			}
			if tc.m.Plural() != tc.plural {
				t.Errorf("Plural() = %q, want %q", tc.m.Plural(), tc.plural)
			}
		})
	}
}
