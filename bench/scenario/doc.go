// Package scenario drives the cluster while a bench variant runs, and watches
// the result from outside the variant's process.
//
// An Observer (its own metadata watch on the namespace under test) tells when
// every pod carries a value (Converge, Bare) and how long each label change
// took to be undone (Churn). Measuring from outside the variant's process
// makes the figures the same for every variant, whatever it is built from.
package scenario
