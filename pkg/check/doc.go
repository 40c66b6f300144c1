// Package check is metawatch's `check` subcommand: it validates a
// configuration offline and, given a kubeconfig, against a cluster (kinds
// resolve, the API server accepts the selectors, the identity holds what the
// configuration needs and, with --rbac, nothing more, the admission policies
// of rules with atCreation pass a dry run), writes the chart values whose
// RBAC is what the configuration needs (--chart-values), previews what the
// rules would do to objects in files (--objects) and reports the cluster's
// objects not as the rules want (--report). Run is the whole command:
// cmd/metawatch hands it the arguments after "check".
//
// It is a package of its own, as cmctl's and kubectl plugins' subcommands
// are, because it is a second program beside the controller: it starts no
// manager, caches nothing and writes nothing to the cluster (its only writes
// are dry runs). It is built from the controller's packages: acceptance,
// the very steps the controller takes before it runs a configuration, so
// that it rejects what the controller would, with the same messages, and
// config, apiserver, access, admission, brake and preview for the rest; the
// controller imports nothing of it. Kept apart, cmd/metawatch stays the controller's start-up story,
// and check's logic is tested by calling Run, without building the binary.
package check
