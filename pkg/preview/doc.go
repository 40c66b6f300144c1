// Package preview tells what metawatch's rules would do to given objects,
// without writing anything: for each object of a watched kind, which rules
// apply and why the others do not (kind, watch, write scope, match), the
// keys that would be set, removed or released and where each value comes
// from (the rule, the Namespace, an owner), the keys another field manager
// owns that metawatch would leave (conflicts), and the requirements the
// object fails.
//
// It evaluates with the controller's own rules (rules.Evaluate), on the
// objects' labels, annotations, owner references and managedFields, as the
// controller's cache holds them. Namespaces and owners come from the same
// objects or, for `metawatch check --live`, from the cluster (Lookup).
package preview
