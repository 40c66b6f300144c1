// Package converge is the bench's converge scenario: the first namespace's
// cost-center label changed, and the time until the harness's own watch
// sees every pod of that namespace carry the new value, with what the
// variant did meanwhile (bench/child's Activity). Its reference is the bare
// client (RunBare): the same applies made by the harness itself with the
// same concurrency, no cache, no controller, which also leaves every
// variant the same starting point for converge and churn.
//
// Run measures one variant at one size and returns its figures (Result),
// which the harness keeps in the variant's report.Result, and RunBare the
// reference's (Bare), kept in its report.Run; Table is the report's section
// of them. The figures' JSON names are the results format of bench/results.
package converge
