// Package fanout is the bench's fanout scenario: every bench Namespace
// relabelled until every pod carries the new value, the write half of
// metawatch's job. Its variants are its own: the metawatch binary as it
// runs by default, with the bare client's workers, at a fixed 50 writes a
// second (QPS50), and the harness's bare client (Bare). Two probe clients on
// the same API server, idle and during each fan-out, show what it costs the
// others, and each metawatch replica's own metrics, read once a second, what
// held its writes (the write trace).
//
// Run measures it at one size and hands each variant's figures (Result) to
// the harness as they come; Table is the report's section of them. The
// figures' JSON names are the results format of bench/results.
package fanout
