// Package settings is what the operator sets for one metawatch process: its
// flags, as one value. The value is made once (Defaults), filled by the
// flags, and handed down by pointer to every part that acts on a setting:
// the reloader, each generation it runs and the generation's controllers.
//
// One value, rather than each layer copying the fields it passes on, keeps
// a setting one hop from where it acts, and its default in one place.
package settings

import (
	"time"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/authority/pace"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/wire"
)

// Settings are the process's settings, the same for every generation.
type Settings struct {
	// Identity is the installation's write identity (--field-manager,
	// --adopt-field-manager): every write passes it, every read of
	// ownership takes its names.
	Identity *authority.Identity
	// Mode is the replicas' run mode (authority.ResolveMode).
	Mode authority.Mode

	// MaxConcurrentReconciles per kind.
	MaxConcurrentReconciles int
	// DryRun computes and reports every write, and makes none.
	DryRun bool
	// EventValues lets conflict Events carry the value another field
	// manager wrote (never for annotations of Secrets). Off, they name the
	// manager only: anyone who may list Events reads them.
	EventValues bool
	// Guardrails are the operator's guardrails: a configuration that asks
	// for more is rejected, and every write is checked against them again
	// as it is decided. The configuration's writeScope can narrow theirs,
	// never widen it.
	Guardrails config.Guardrails
	// RemovalBrake bounds how many objects of each kind lose keys per
	// configuration before it is approved (package brake).
	RemovalBrake brake.Bound
	// Pacer paces every write of the process, one rate (package pace).
	// Nil: client-go's rate limit.
	Pacer *pace.Pacer

	// Wire is how the caches fetch (status-only updates, connections).
	Wire wire.Options
	// StockInformers gives the caches client-go's informers instead of the
	// streaming ones (--stream-lists=false).
	StockInformers bool
	// ShutdownTimeout bounds stopping a generation (on SIGTERM, or the old
	// one in a swap): its writes in flight, then its controllers and cache.
	ShutdownTimeout time.Duration

	// Installation names this installation on what it makes besides the
	// watched objects' keys (admission policies), so that two installations
	// never change each other's. Empty: the configuration source's name.
	Installation string
	// PolicyOwner names the ClusterRole that owns the admission policies;
	// empty: none.
	PolicyOwner string
	// EventWritesPerMinute bounds the Event writes of what the rules find.
	EventWritesPerMinute int
	// OpenReports keeps the findings as OpenReports reports; ReportResults
	// bounds each report's results.
	OpenReports   bool
	ReportResults int
}

// Defaults are the settings of a process given no flag: the flags' defaults.
func Defaults() Settings {
	return Settings{
		Identity:                authority.NewIdentity(authority.DefaultFieldManager, ""),
		Mode:                    authority.Single,
		MaxConcurrentReconciles: 4,
		Guardrails:              config.DefaultGuardrails(),
		RemovalBrake:            brake.DefaultBound(),
		Wire:                    wire.Options{BookmarkInterval: wire.DefaultBookmarkInterval},
		ShutdownTimeout:         30 * time.Second,
		EventWritesPerMinute:    eventdigest.DefaultWritesPerMinute,
		ReportResults:           reports.DefaultMaxResults,
	}
}
