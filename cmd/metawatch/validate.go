package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/reports"
)

// validateFlags checks every flag that can be checked without the API server,
// says every mistake at once, and resolves the run mode (authority.Mode) the
// flags ask for. run calls it before anything reaches the network: a wrong
// flag is named at start, not after the configuration was loaded (which
// retries an unreachable server for as long as it takes).
func validateFlags(opts options) (authority.Mode, error) {
	mode, modeErr := authority.ResolveMode(opts.manager.LeaderElection, opts.warmStandby, opts.sharding.enabled)
	return mode, errors.Join(
		modeErr,
		opts.source.Validate(),
		bookmarkIntervalValid(opts.settings.Wire.BookmarkInterval),
		metricsCertValid(opts.manager),
		atLeastOne("--max-concurrent-reconciles", opts.settings.MaxConcurrentReconciles),
		notNegative("--graceful-shutdown-timeout", opts.manager.GracefulShutdownTimeout, "30s"),
		opts.sharding.validate(),
		leaseFlagsValid(opts),
		authority.ValidFieldManager("--field-manager", opts.settings.Identity.FieldManager),
		adoptFieldManagerValid(opts.settings.Identity.FieldManager, opts.settings.Identity.Adopted),
		opts.settings.RemovalBrake.Validate(),
		brakeRecordValid(opts.brakeRecord),
		opts.writeRate.Validate(),
		atLeastOne("--event-writes-per-minute", opts.settings.EventWritesPerMinute),
		reportResultsValid(opts.settings.ReportResults),
	)
}

// brakeRecordValid checks --removal-brake-record: empty (the default), or
// NAMESPACE/NAME of a ConfigMap.
func brakeRecordValid(record string) error {
	if record == "" {
		return nil
	}
	ns, name, ok := strings.Cut(record, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return fmt.Errorf("--removal-brake-record %q: want NAMESPACE/NAME of a ConfigMap, e.g. metawatch-system/metawatch-removal-brake", record)
	}
	return nil
}

// adoptFieldManagerValid checks --adopt-field-manager: empty (adopt
// nothing), or a valid name other than --field-manager's.
func adoptFieldManagerValid(own, adopt string) error {
	switch adopt {
	case "":
		return nil
	case own:
		return fmt.Errorf("--adopt-field-manager is %q, the same as --field-manager: name the field manager this installation wrote as before the change, or leave it empty", adopt)
	}
	return authority.ValidFieldManager("--adopt-field-manager", adopt)
}

// bookmarkIntervalValid refuses a negative --unchanged-bookmark-interval,
// which would otherwise silently mean 0.
func bookmarkIntervalValid(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--unchanged-bookmark-interval=%s: want 0 (a bookmark for every unchanged event left out) or a positive duration such as 1s (the default)", d)
	}
	return nil
}

// reportResultsValid checks --open-reports-max-results: 1 to
// reports.MaxResultsLimit.
func reportResultsValid(n int) error {
	if n < 1 || n > reports.MaxResultsLimit {
		return fmt.Errorf("--open-reports-max-results=%d: want 1 to %d (the default is %d): a report's results are one object, and the API server refuses objects over 1.5 MiB",
			n, reports.MaxResultsLimit, reports.DefaultMaxResults)
	}
	return nil
}

func atLeastOne(flag string, n int) error {
	if n < 1 {
		return fmt.Errorf("%s=%d: want 1 or more", flag, n)
	}
	return nil
}

func notNegative(flag string, d time.Duration, example string) error {
	if d < 0 {
		return fmt.Errorf("%s=%s: want a positive duration such as %s", flag, d, example)
	}
	return nil
}

// leaseFlagsValid checks the flags of the Leases, when there are any
// (--leader-elect or --sharding): where they live, their names, and timings
// client-go's leader election and the sharding ring both accept.
func leaseFlagsValid(opts options) error {
	if !opts.manager.LeaderElection && !opts.sharding.enabled {
		return nil
	}
	var errs []error
	if _, err := metamanager.LeaseNamespace(opts.manager); err != nil {
		errs = append(errs, err)
	}
	if opts.manager.LeaderElection {
		errs = append(errs, leaseName("--leader-election-id", opts.manager.LeaderElectionID, opts.manager.LeaderElectionID))
	}
	if opts.sharding.enabled {
		// The ring names its Leases <ring>-member-<pod> and <ring>-bucket-NN, and labels them with it.
		errs = append(errs, leaseName("--sharding-ring", opts.sharding.ring, opts.sharding.ring+"-bucket-63"))
		for _, msg := range validation.IsValidLabelValue(opts.sharding.ring) {
			errs = append(errs, fmt.Errorf("--sharding-ring=%q: the ring's Leases are labelled with it: %s", opts.sharding.ring, msg))
		}
	}
	return errors.Join(append(errs, leaseTimingsValid(opts.manager))...)
}

// leaseName checks that the Lease a flag's value names is a valid object name.
func leaseName(flag, value, lease string) error {
	if msgs := validation.IsDNS1123Subdomain(lease); len(msgs) > 0 {
		return fmt.Errorf("%s=%q: the Lease %q it names is not a valid name: %s", flag, value, lease, strings.Join(msgs, "; "))
	}
	return nil
}

// leaseTimingsValid: a renewal retried every retry period, with jitter, must
// fit in the renew deadline, and the holder must stop writing (renew
// deadline) before a standby may take over (lease duration).
func leaseTimingsValid(o metamanager.Options) error {
	lease, renew, retry := o.LeaseDuration, o.RenewDeadline, o.RetryPeriod
	if retry > 0 && time.Duration(leaderelection.JitterFactor*float64(retry)) < renew && renew < lease {
		return nil
	}
	return fmt.Errorf("--leader-election-retry-period=%s, --leader-election-renew-deadline=%s, --leader-election-lease-duration=%s: "+
		"want 0 < %.1f × retry period < renew deadline < lease duration, e.g. the defaults 2s, 10s, 15s", retry, renew, lease, leaderelection.JitterFactor)
}
