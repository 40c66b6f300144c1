// Package reload runs metawatch's configuration as generations and swaps
// them when the configuration changes.
//
// The configuration is a file (--config-file, read at start-up) or the
// kubectl-managed selectors ConfigMap (--config-map), which is followed live:
// a single-object list/watch by name (so RBAC can grant it with resourceNames),
// the one typed object in the process, small whatever the cluster's size.
//
// Each valid version runs as a generation: its own metadata cache, informers
// and controllers. Changing selectors needs new informers, and controllers
// bound to removed informers must be rebuilt (controller-runtime#2983), so
// whole generations are swapped: build the new one, start it, wait for its
// sync, stop the old one, then let the new one write. A bad version is
// rejected with an InvalidConfig Event on the ConfigMap and the running
// generation is kept; a deleted ConfigMap keeps it too.
//
// What the operator set (package settings) reaches every generation and its
// controllers whole, from Reloader.Settings.
//
// Which replicas run generations depends on the mode. With leader election
// only the leader does; a standby only follows the ConfigMap until it leads.
// Sharded (--sharding), every replica runs its own, on its share of the
// objects. A single replica without either runs them itself.
//
// # Where things are
//
//   - reloader.go: the Reloader (AddTo, Start) and the swap of generations.
//   - follow.go: the follower every replica runs, so a new leader runs the
//     ConfigMap as it is when it starts leading.
//   - loop.go: the loop that runs generations (the leader's, or every
//     replica's when sharded): sync, reject, retry with backoff.
//   - generation.go: one generation: its configuration accepted (package
//     acceptance: resolved, judged, its access checked), built, frozen.
//   - access.go: watches forbidden at build time or since, rechecked until allowed.
//   - source.go: --config-file or --config-map.
//   - sharding.go: --sharding: generations on every replica, their caches on
//     its share of the buckets, which they follow as it moves.
//   - mode.go: what each run mode needs of the Reloader; wiring.go: what a
//     generation hands its controllers besides the settings (its guard,
//     gates and brake).
//   - brake.go: the removal brake, its record and approvals; identity.go:
//     another writer applying as this installation's field manager.
//   - events.go: the process's bounded Events (package eventdigest);
//     reports.go: the OpenReports writer (--open-reports).
//   - prune.go: admission policies this installation no longer wants.
package reload
