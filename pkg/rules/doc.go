// Package rules is metawatch's pure core: given an object's labels and
// annotations and its namespace's, it says which labels and annotations the
// rules want, which keys to delete, and which requirements are violated.
//
// No client, no I/O, no clock: the same input always gives the same answer, so
// the whole of what rules do is covered by table and fuzz tests, and the
// controller only has to compare and write.
//
// What "desired" means follows server-side apply: the returned Labels and
// Annotations are every key metawatch owns on the object. A key a rule stops
// wanting (rule edited, removed, or no longer matching) is simply absent, and
// applying the result deletes it if metawatch had set it, and only then.
//
//	r := rules.Rule{Name: "team-from-namespace", Match: labels.Everything(),
//		CopyLabels: []string{"team"}}
//	result := rules.Evaluate([]rules.Rule{r}, rules.Metadata{Labels: pod.Labels}, rules.Sources{Namespace: &rules.Metadata{Labels: ns.Labels}})
//	// result.Labels["team"] == rules.Owned{Value: ns.Labels["team"], Rule: "team-from-namespace"}
package rules
