package rulecontroller

import (
	"testing"
)

// The memo of parsed managedFields sets answers what parsing answers, on a
// miss and on a hit, whatever the bytes; a set it handed out is not changed
// by a later parse of other bytes.
func FuzzParsedFieldsAnswerAsParsing(f *testing.F) {
	f.Add([]byte(`{"f:metadata":{"f:labels":{"f:team":{},".":{}},"f:annotations":{"f:a":{}}}}`), []byte(`{"f:metadata":{"f:labels":{"f:tier":{}}}}`))
	f.Add([]byte(`not json`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := parseOwned(a)
		first := parsedFields.keysOf(a)
		parsedFields.keysOf(b)
		again := parsedFields.keysOf(a)
		for _, got := range []owned{first, again} {
			if !got.labels.Equal(want.labels) || !got.annotations.Equal(want.annotations) {
				t.Fatalf("memo gave %v, parsing %v", got, want)
			}
		}
	})
}
