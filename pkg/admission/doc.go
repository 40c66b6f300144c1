// Package admission is the MutatingAdmissionPolicy (admissionregistration.k8s.io/v1)
// and its binding that give a rule's keys to objects as they are created, so
// that their first version already carries them: a policy that requires the
// key at admission (a ValidatingAdmissionPolicy, Gatekeeper) then admits
// them, where metawatch's own write comes milliseconds to seconds later.
//
// The policy is the rule's set and copy-from-Namespace actions as CEL: the
// rule's match selector, the write scope and the watches of its kinds
// become its match conditions (it writes only what the controller caches
// and may write), and each key an apply configuration (a copied
// key only where the Namespace has it). Its failure policy is Ignore: a
// creation never fails because of metawatch. The controller keeps existing
// objects, and later changes, in sync as for any rule.
//
// The API server computes a create's managedFields before mutating admission
// runs: a key the policy sets is owned by no field manager, so metawatch's
// apply takes it without a conflict when its source changes, while a hand
// edit (kubectl label) owns it and conflicts as any other manager's.
//
// A generation runs a Syncer for its rules with atCreation: it creates,
// updates and deletes the policies and bindings its installation made (by
// their managed-by and installation labels), through the same guard as the controllers' writes, so
// that one replica at a time writes them and a stalled one cannot undo a
// newer version. Where the API server does not serve the API, or RBAC
// forbids it, the rules run without atCreation and the Syncer says so.
//
// The process also runs a Pruner, whatever becomes of the configuration:
// it deletes the pairs of its installation that the operator's flags no
// longer allow, judged from each policy's own spec (Judge), since after a
// restart with narrower flags the configuration is rejected and no
// generation runs, while the pairs would go on writing on every create.
// What RBAC or --dry-run keeps, Leftovers reports loudly. With an Owner the
// pairs are owned by a ClusterRole, and go when it does (helm uninstall).
package admission
