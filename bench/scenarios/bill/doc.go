// Package bill is the bench's bill scenario: what each variant costs the
// control plane, on the local control plane only, whose kube-apiserver's
// process is read on this machine (probe.APIServer). At each size, before
// any variant, the reference (Alone): the API server idle, then under the
// firehose with nothing watching. Then per variant, from just before it
// starts (Start, a Reading): the API server's CPU and peak resident set
// until the variant has synced, its resident set after the steady window,
// and its CPU under the variant's firehose.
//
// The harness keeps the reference in its report.Run and each variant's
// Share in its report.Result; Table is the report's section of them. The
// figures' JSON names are the results format of bench/results.
package bill
