package onenode

import "testing"

func TestUnescapeMountPath(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"a plain path is kept":         {`/root/.cache/metawatch/kind/.rootfs-1/proc`, `/root/.cache/metawatch/kind/.rootfs-1/proc`},
		"a space is undone":            {`/tmp/a\040b/proc`, `/tmp/a b/proc`},
		"a backslash is undone":        {`/tmp/a\134b`, `/tmp/a\b`},
		"a short escape at the end":    {`/tmp/a\04`, `/tmp/a\04`},
		"a non-octal escape is kept":   {`/tmp/a\09x`, `/tmp/a\09x`},
		"a tab and a newline undone":   {`/t\011\012`, "/t\t\n"},
		"nothing but an escaped space": {`\040`, " "},
	} {
		t.Run(name, func(t *testing.T) {
			if got := unescapeMountPath(tc.in); got != tc.want {
				t.Errorf("unescapeMountPath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
