// Package report writes the bench harness's results: the figures each variant
// measured (Result), written as JSON (the record), a Markdown table (to read)
// and PNG plots (memory against cluster size, latency distribution).
package report
