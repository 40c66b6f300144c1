package main

import (
	"testing"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/settings"
)

// Two installations that read different configurations name themselves
// differently on the admission policies they make, even when each mounts
// its own file at the same path.
func TestInstallationTellsInstallationsApart(t *testing.T) {
	cases := map[string]struct {
		opts options
		want string
	}{
		"a ConfigMap names it": {opts: options{source: reload.Source{ConfigMap: "shop/selectors"},
			settings: settings.Settings{Mode: authority.Leader}, manager: metamanager.Options{LeaderElection: true, LeaderElectionNamespace: "shop"}}, want: "shop/selectors"},
		"a file under leader election: its Lease": {opts: options{source: reload.Source{File: "/etc/metawatch/config.yaml"},
			settings: settings.Settings{Mode: authority.Leader}, manager: metamanager.Options{LeaderElection: true, LeaderElectionNamespace: "team-a", LeaderElectionID: "metawatch"}}, want: "Lease team-a/metawatch"},
		"the same file path, another Lease": {opts: options{source: reload.Source{File: "/etc/metawatch/config.yaml"},
			settings: settings.Settings{Mode: authority.Leader}, manager: metamanager.Options{LeaderElection: true, LeaderElectionNamespace: "team-b", LeaderElectionID: "metawatch"}}, want: "Lease team-b/metawatch"},
		"a file without leader election: its path": {opts: options{source: reload.Source{File: "/tmp/config.yaml"}}, want: "file /tmp/config.yaml"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := installation(tc.opts); got != tc.want {
				t.Errorf("installation: %q, want %q", got, tc.want)
			}
		})
	}
}
