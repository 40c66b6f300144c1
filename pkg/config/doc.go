// Package config is metawatch's configuration: its types, strict parsing,
// validation with field paths, kind resolution and the operator's guardrails.
//
// A configuration says what to watch, which labels and annotations rules keep,
// and where rules may write. Its errors (errors.go) say which fault is the
// configuration's and show one problem per line.
//
// The configuration lives under the data key "config.yaml" of a ConfigMap that
// users manage with kubectl, so every error must tell them which line to fix:
// errors are apimachinery field.Errors ("watches[2].labelSelector: Invalid
// value: ..."), unknown fields are errors (a typo must not silently widen a
// watch), and selectors are parsed with the same apimachinery parsers the API
// server uses, so what passes here is what the server applies.
//
// Parse and Validate need no cluster. Resolve maps each watch's kind to a
// resource with the cluster's RESTMapper, the last step before the Manager
// builds informers from the result.
package config
