package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The configuration is kindnetd's, valid JSON, with a default route of each
// family the node's pod CIDRs have.
func TestConfIsValidForEveryFamily(t *testing.T) {
	for name, tc := range map[string]struct {
		cidrs, routes []string
	}{
		"IPv4":       {cidrs: []string{"10.244.0.0/24"}, routes: []string{"0.0.0.0/0"}},
		"IPv6":       {cidrs: []string{"fd00:10:244::/64"}, routes: []string{"::/0"}},
		"dual stack": {cidrs: []string{"10.244.0.0/24", "fd00:10:244::/64"}, routes: []string{"0.0.0.0/0", "::/0"}},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := conf.Execute(&b, map[string][]string{"PodCIDRs": tc.cidrs, "Routes": routes(tc.cidrs)}); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Plugins []struct {
					Type string
					IPAM struct {
						Routes []struct{ Dst string }
						Ranges [][]struct{ Subnet string }
					}
				}
			}
			if err := json.Unmarshal(b.Bytes(), &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, b.String())
			}
			if len(got.Plugins) != 2 || got.Plugins[0].Type != "ptp" || got.Plugins[1].Type != "portmap" {
				t.Fatalf("plugins: %+v", got.Plugins)
			}
			ipam := got.Plugins[0].IPAM
			for i, c := range tc.cidrs {
				if ipam.Ranges[i][0].Subnet != c || ipam.Routes[i].Dst != tc.routes[i] {
					t.Errorf("range %d: %+v, route %+v; want %s via %s", i, ipam.Ranges[i], ipam.Routes[i], c, tc.routes[i])
				}
			}
		})
	}
}
