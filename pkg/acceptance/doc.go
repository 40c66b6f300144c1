// Package acceptance decides whether metawatch would run a configuration:
// its kinds resolve against the cluster's discovery, it stays within the
// operator's guardrails (with the kinds' scopes as the cluster serves them),
// the admission policies of its rules with atCreation stay within the API
// server's CEL size, and one object of each watch can be listed. A watch the
// identity may not list is set aside (Forbidden), not refused: the
// controller serves the other kinds and reports it.
//
// It is one package because `metawatch check` promises to reject what the
// controller would, with the same messages: the reloader (before every
// generation, and at start-up) and check call the same steps in the same
// order, so a step added here reaches both. It sits below both and above
// what it asks (config, apiserver, admission, access): config cannot check
// the policies' size itself, since admission builds them from config.
//
// # Where things are
//
//   - accept.go: Accept, the steps against a cluster, and Accepted, what
//     they found, as far as they got (check prints each step's part).
//   - judge.go: the steps that need no cluster (Offline, and the same
//     within Accept); nil guardrails become the defaults here alone.
package acceptance
