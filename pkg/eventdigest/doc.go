// Package eventdigest folds per-object occurrences into aggregate Events:
// one per reason, rule, kind and namespace, written at most once per
// interval each, within a bound of Event writes per minute for the process.
// An object that starts violating a require rule, a key another field
// manager holds, a fight, keys a guardrail leaves: each is an occurrence,
// and a million of them are as many Events as there are namespaces (and
// rules), not a million. The fold is pure (fold.go); Digest writes.
package eventdigest
