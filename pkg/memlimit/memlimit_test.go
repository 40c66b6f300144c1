package memlimit

import (
	"strings"
	"testing"
)

func TestFromContainer(t *testing.T) {
	cases := map[string]struct {
		flag, gomemlimit string
		want             int64
		wantErr          string
	}{
		"no flag sets no limit":                   {},
		"a quantity gives 90% of it":              {flag: "1Gi", want: 966367641},
		"bytes as the downward API gives them":    {flag: "536870912", want: 483183820},
		"GOMEMLIMIT wins over the flag":           {flag: "1Gi", gomemlimit: "800MiB"},
		"a value that is no quantity is refused":  {flag: "lots", wantErr: `--container-memory-limit="lots": want the container's memory limit in bytes or as a quantity such as 1Gi`},
		"zero is refused, not taken for no limit": {flag: "0", wantErr: "--container-memory-limit=\"0\""},
		"a negative quantity is refused":          {flag: "-1Gi", wantErr: "--container-memory-limit=\"-1Gi\""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := FromContainer(tc.flag, tc.gomemlimit)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("FromContainer(%q, %q) = %d, %v; want %d", tc.flag, tc.gomemlimit, got, err, tc.want)
			}
		})
	}
}
