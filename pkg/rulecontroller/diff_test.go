package rulecontroller

import (
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	cases := map[string]struct {
		before, after map[string]string
		want          mapDiff
	}{
		"nothing to nothing":  {want: mapDiff{}},
		"same labels":         {before: map[string]string{"a": "1"}, after: map[string]string{"a": "1"}, want: mapDiff{}},
		"a label added":       {before: nil, after: map[string]string{"a": "1"}, want: mapDiff{Added: map[string]string{"a": "1"}}},
		"a label removed":     {before: map[string]string{"a": "1", "b": "2"}, after: map[string]string{"b": "2"}, want: mapDiff{Removed: []string{"a"}}},
		"a value changed":     {before: map[string]string{"a": "1"}, after: map[string]string{"a": "2"}, want: mapDiff{Changed: map[string]string{"a": "2"}}},
		"changed to empty":    {before: map[string]string{"a": "1"}, after: map[string]string{"a": ""}, want: mapDiff{Changed: map[string]string{"a": ""}}},
		"removed keys sorted": {before: map[string]string{"z": "", "a": "", "m": ""}, want: mapDiff{Removed: []string{"a", "m", "z"}}},
		"all at once": {
			before: map[string]string{"keep": "1", "change": "1", "drop": "1"},
			after:  map[string]string{"keep": "1", "change": "2", "new": "1"},
			want:   mapDiff{Added: map[string]string{"new": "1"}, Changed: map[string]string{"change": "2"}, Removed: []string{"drop"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := diffMaps(tc.before, tc.after)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff = %+v, want %+v", got, tc.want)
			}
			if got.Empty() != reflect.DeepEqual(tc.want, mapDiff{}) {
				t.Errorf("Empty() = %v for %+v", got.Empty(), got)
			}
		})
	}
}
