// Package controller holds metawatch's controllers: one per watched kind, fed
// by the metadata cache through predicates that drop what no rule can act on.
//
// Metadata watches still deliver every status change of an object (its
// resourceVersion changes), and on a large cluster those are almost all the
// events. GenerationChangedPredicate does not help (status updates do not bump
// metadata.generation on most kinds, and labels do not either), so updates
// pass only when labels or annotations changed; create and delete always pass.
//
// Each kind's controller reads an object once and hands it to its steps: the
// Reporter, which logs what changed, and, for a kind with rules, the
// RuleReconciler. The Reporter's diff needs the old labels, which a
// level-triggered reconciler does not get: the event handler
// keeps the labels and annotations an object had before its first unreported
// change, only until the reconciler reports it, so memory grows with the queue,
// not with the cluster.
package controller
