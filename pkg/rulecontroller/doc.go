// Package rulecontroller is metawatch's controllers: one per watched kind, fed by
// the metadata cache, keeping the kind's labels and annotations as the rules
// want them.
//
// Predicates drop the events no rule can act on, so a reconcile runs only for
// what may need a write.
//
// # Where things are
//
//   - add.go: Setup adds one controller per watch to a Manager, given the
//     operator's settings (package settings); options.go: what a generation
//     wires (Wiring).
//   - reconciler.go: Reconcile, read once from the cache, then each step.
//   - reporter.go, diff.go: the first step logs what changed.
//   - rule_reconciler.go, apply.go, remove.go: the second step keeps the
//     rules: server-side apply of owned keys (conflicts yielded, reclaimed or
//     forced in apply.go), merge patches that remove.
//   - managed_keys.go: ownership read from managedFields, once per decision;
//     adopt.go: keys the installation's former field manager owns, taken over.
//   - guardrails.go: what the rules want narrowed to the operator's limits;
//     brake.go: removals and releases held by the removal brake, and queued
//     again once approved; relist.go: removals held while a kind relists,
//     queued again when it ends.
//   - audit.go, audit_off.go, audit_shard.go: require audits, the objects
//     rules leave off, and which replica audits an object (sharded);
//     findings.go: what the audits hold, for the OpenReports reports.
//   - events.go: findings as occurrences of the bounded Events (package
//     eventdigest); fights.go: writes undone by another writer.
//   - handler.go, handler_namespaces.go, predicate.go: what each event queues;
//     owner_chain.go: the owners copyFromOwner walks; priority.go: fan-outs
//     queued below direct changes; requeue.go: the objects of buckets that
//     come to this replica (sharded), queued.
//   - memory.go and memory_*.go: what a controller remembers between events.
//   - every write passes the generation's guard (package authority): its
//     fence, and sharded the replica's hold on the object's bucket.
//
// # Why updates are filtered
//
// Metadata watches still deliver every status change of an object (its
// resourceVersion changes), and on a large cluster those are almost all the
// events. GenerationChangedPredicate does not help (status updates do not bump
// metadata.generation on most kinds, and labels do not either), so updates
// pass only when labels or annotations changed; create and delete always pass.
// Creates of objects that already are as their rules want are not queued
// either (handler.go): on a converged cluster that is the whole initial list.
//
// # Why a memory, and why it stays small
//
// The reporter's diff needs the old labels, which a level-triggered reconciler
// does not get: the event handler keeps the labels and annotations an object
// had before its first unreported change, only until the reconciler reports
// it. The rules remember keys taken by hand, conflicts yielded and fights.
// Each entry lives only while something is pending for its object, so memory
// grows with the queue, not with the cluster.
package rulecontroller
