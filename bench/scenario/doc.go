// Package scenario is what the harness does to the cluster while a variant
// runs, and how it sees the result: an Observer (its own metadata watch on
// the namespace under test) tells when every pod carries a value (Converge,
// Bare) and how long each label change took to be undone (Churn). Measuring
// from outside the variant's process makes the figures the same for every
// variant, whatever it is built from.
package scenario
