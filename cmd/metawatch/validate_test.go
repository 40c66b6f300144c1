package main

import (
	"flag"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/metawatch/metawatch/pkg/reload"
)

// defaultOptions is what parseFlags makes of a command line with only
// --config-file: every default, as a user starts metawatch.
func defaultOptions(t *testing.T) options {
	t.Helper()
	return parseFlagsOn(t, "--config-file", "config.yaml")
}

func TestValidateFlags(t *testing.T) {
	cases := map[string]struct {
		change func(*options)
		env    map[string]string
		want   []string // each must be in the error; none: no error
	}{
		"the defaults are valid": {},
		"leader election with its namespace and the default timings is valid": {
			change: func(o *options) { o.manager.LeaderElection, o.manager.LeaderElectionNamespace = true, "kube-system" },
		},
		"sharding with POD_NAME and a namespace is valid": {
			change: func(o *options) { o.sharding.enabled, o.manager.LeaderElectionNamespace = true, "kube-system" },
			env:    map[string]string{"POD_NAME": "metawatch-0"},
		},
		"a write-rate floor of zero": {
			change: func(o *options) { o.writeRate.Min = 0 },
			want:   []string{"--write-rate-min is 0: expected a finite positive number of writes per second"},
		},
		"a write-rate floor above its ceiling": {
			change: func(o *options) { o.writeRate.Min, o.writeRate.Max = 200, 100 },
			want:   []string{"--write-rate-min (200) is above --write-rate-max (100): the floor must be at most the ceiling"},
		},
		"a negative write-rate ceiling": {
			change: func(o *options) { o.writeRate.Max = -1 },
			want:   []string{"--write-rate-max is -1: expected a finite positive number of writes per second"},
		},
		"an infinite write-rate ceiling": {
			change: func(o *options) { o.writeRate.Max = math.Inf(1) },
			want:   []string{"--write-rate-max is +Inf: expected a finite positive number of writes per second"},
		},
		"an infinite write-rate floor and ceiling": {
			change: func(o *options) { o.writeRate.Min, o.writeRate.Max = math.Inf(1), math.Inf(1) },
			want:   []string{"--write-rate-min is +Inf: expected a finite positive number of writes per second"},
		},
		"a write-rate floor equal to its ceiling (a fixed rate) is valid": {
			change: func(o *options) { o.writeRate.Min, o.writeRate.Max = 50, 50 },
		},
		"no cap on a 429's pause": {
			change: func(o *options) { o.writeRate.RetryAfterMax = 0 },
			want:   []string{"--write-retry-after-max is 0s: expected a positive duration", "e.g. 30s"},
		},
		"a negative cap on a 429's pause": {
			change: func(o *options) { o.writeRate.RetryAfterMax = -time.Second },
			want:   []string{"--write-retry-after-max is -1s: expected a positive duration"},
		},
		"a 429's pause capped below a second is valid": {
			change: func(o *options) { o.writeRate.RetryAfterMax = 500 * time.Millisecond },
		},
		"no Event writes a minute": {
			change: func(o *options) { o.settings.EventWritesPerMinute = 0 },
			want:   []string{"--event-writes-per-minute=0: want 1 or more"},
		},
		"no results in a report": {
			change: func(o *options) { o.settings.ReportResults = 0 },
			want:   []string{"--open-reports-max-results=0: want 1 to 2000 (the default is 1000)"},
		},
		"more results in a report than an object holds": {
			change: func(o *options) { o.settings.ReportResults = 5000 },
			want:   []string{"--open-reports-max-results=5000: want 1 to 2000", "refuses objects over 1.5 MiB"},
		},
		"no configuration source": {
			change: func(o *options) { o.source = reload.Source{} },
			want:   []string{"no configuration: set --config-file PATH or --config-map NAMESPACE/NAME"},
		},
		"a ConfigMap without its namespace": {
			change: func(o *options) { o.source = reload.Source{ConfigMap: "selectors"} },
			want:   []string{`--config-map "selectors": want NAMESPACE/NAME`},
		},
		"adopting the keys of the field manager it writes as": {
			change: func(o *options) { o.settings.Identity.Adopted = o.settings.Identity.FieldManager },
			want:   []string{`--adopt-field-manager is "metawatch", the same as --field-manager`, "name the field manager this installation wrote as before"},
		},
		"adopting the keys of a name the API server refuses": {
			change: func(o *options) { o.settings.Identity.Adopted = strings.Repeat("m", 129) },
			want:   []string{"--adopt-field-manager"},
		},
		"adopting the keys of the name it wrote as before is valid": {
			change: func(o *options) {
				o.settings.Identity.FieldManager, o.settings.Identity.Adopted = "metawatch-team-a", "metawatch"
			},
		},
		"no reconciles at once": {
			change: func(o *options) { o.settings.MaxConcurrentReconciles = 0 },
			want:   []string{"--max-concurrent-reconciles=0: want 1 or more"},
		},
		"a negative shutdown timeout": {
			change: func(o *options) { o.manager.GracefulShutdownTimeout = -time.Second },
			want:   []string{"--graceful-shutdown-timeout=-1s: want a positive duration"},
		},
		"a negative bookmark interval": {
			change: func(o *options) { o.settings.Wire.BookmarkInterval = -time.Second },
			want:   []string{"--unchanged-bookmark-interval=-1s"},
		},
		"a renew deadline past the lease duration": {
			change: func(o *options) {
				o.manager.LeaderElection, o.manager.LeaderElectionNamespace = true, "kube-system"
				o.manager.RenewDeadline = 20 * time.Second
			},
			want: []string{"--leader-election-renew-deadline=20s", "renew deadline < lease duration", "the defaults 2s, 10s, 15s"},
		},
		"a retry period that does not fit in the renew deadline": {
			change: func(o *options) {
				o.sharding.enabled, o.manager.LeaderElectionNamespace = true, "kube-system"
				o.manager.RetryPeriod = 9 * time.Second
			},
			env:  map[string]string{"POD_NAME": "metawatch-0"},
			want: []string{"--leader-election-retry-period=9s"},
		},
		"lease timings are not checked when nothing uses a Lease": {
			change: func(o *options) { o.manager.RenewDeadline = time.Hour },
		},
		"a Lease name that is not an object name": {
			change: func(o *options) {
				o.manager.LeaderElection, o.manager.LeaderElectionNamespace = true, "kube-system"
				o.manager.LeaderElectionID = "Metawatch_Leader"
			},
			want: []string{`--leader-election-id="Metawatch_Leader": the Lease "Metawatch_Leader" it names is not a valid name`},
		},
		"a ring name that is no label value": {
			change: func(o *options) {
				o.sharding.enabled, o.manager.LeaderElectionNamespace = true, "kube-system"
				o.sharding.ring = strings.Repeat("r", 64)
			},
			env:  map[string]string{"POD_NAME": "metawatch-0"},
			want: []string{"--sharding-ring=", "the ring's Leases are labelled with it"},
		},
		"sharding with leader election": {
			change: func(o *options) { o.sharding.enabled, o.manager.LeaderElection = true, true },
			env:    map[string]string{"POD_NAME": "metawatch-0"},
			want:   []string{"--sharding and --leader-elect exclude each other"},
		},
		"a warm standby without leader election": {
			change: func(o *options) { o.warmStandby = true },
			want:   []string{"--warm-standby needs --leader-elect", "add --leader-elect or drop --warm-standby"},
		},
		"a warm standby when sharded": {
			change: func(o *options) { o.warmStandby, o.sharding.enabled = true, true },
			env:    map[string]string{"POD_NAME": "metawatch-0"},
			want:   []string{"--warm-standby and --sharding exclude each other"},
		},
		"every mistake is said at once": {
			change: func(o *options) {
				o.source = reload.Source{}
				o.settings.MaxConcurrentReconciles = -1
				o.manager.GracefulShutdownTimeout = -time.Second
			},
			want: []string{"no configuration", "--max-concurrent-reconciles=-1", "--graceful-shutdown-timeout=-1s"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("POD_NAME", tc.env["POD_NAME"])
			o := defaultOptions(t)
			if tc.change != nil {
				tc.change(&o)
			}
			_, err := validateFlags(o)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("validateFlags: %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("validateFlags: no error, want one saying %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// --write-retry-after-max lands in the pacer's limits (pace.New reads it
// from there), 30s unless set.
func TestWriteRetryAfterMaxFlag(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want time.Duration
	}{
		"the default":  {want: 30 * time.Second},
		"set to 5s":    {args: []string{"--write-retry-after-max=5s"}, want: 5 * time.Second},
		"set to 2m30s": {args: []string{"--write-retry-after-max", "2m30s"}, want: 150 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			o := parseFlagsOn(t, append([]string{"--config-file", "config.yaml"}, tc.args...)...)
			if got := o.writeRate.RetryAfterMax; got != tc.want {
				t.Errorf("--write-retry-after-max: the pacer's cap is %s, want %s", got, tc.want)
			}
		})
	}
}

// parseFlagsOn is parseFlags on a FlagSet of the test's own.
func parseFlagsOn(t *testing.T, args ...string) options {
	t.Helper()
	fs := flag.NewFlagSet("metawatch", flag.ContinueOnError)
	o := bindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return *o
}
func TestBookmarkIntervalValid(t *testing.T) {
	cases := map[string]struct {
		interval time.Duration
		wantErr  string
	}{
		"the default is valid":           {interval: time.Second},
		"zero is a bookmark per event":   {interval: 0},
		"a negative interval is refused": {interval: -time.Second, wantErr: "--unchanged-bookmark-interval=-1s: want 0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := bookmarkIntervalValid(tc.interval)
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
