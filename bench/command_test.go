package main

import "testing"

// The command printed on a results page runs the bench with the same
// arguments when pasted into a shell.
func TestMakeCommandQuotesWhatAShellWouldSplit(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no arguments":                   {want: "make bench"},
		"plain flags stay as they are":   {args: []string{"--sizes", "10000,50000", "--lean-pods"}, want: `make bench ARGS="--sizes 10000,50000 --lean-pods"`},
		"a value with a space is quoted": {args: []string{"--variants", "a b"}, want: `make bench ARGS="--variants 'a b'"`},
		"a quote in a value is kept":     {args: []string{"--out", "it's"}, want: `make bench ARGS="--out 'it'\''s'"`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := makeCommand(tc.args); got != tc.want {
				t.Errorf("makeCommand(%q) = %s, want %s", tc.args, got, tc.want)
			}
		})
	}
}
