package config

// DataKey is the ConfigMap data key that holds the configuration.
const DataKey = "config.yaml"

// Config is the content of the selectors ConfigMap's config.yaml.
type Config struct {
	// Watches are the kinds to cache, one entry per kind.
	Watches []Watch `json:"watches"`
	// Rules keep labels and annotations of watched objects; optional.
	Rules []Rule `json:"rules,omitempty"`
	// Cache tunes what the cache keeps of each object; optional.
	Cache *Cache `json:"cache,omitempty"`
	// WriteScope limits the namespaces rules write in; optional (all).
	WriteScope *WriteScope `json:"writeScope,omitempty"`
}

// allAnnotations is the keepAnnotations entry that keeps every annotation.
const allAnnotations = "*"

// Cache tunes what the cache keeps of each object.
type Cache struct {
	// KeepAnnotations are annotation keys kept in the cache besides those the
	// rules read (annotations are dropped otherwise: they are large, e.g.
	// kubectl's last-applied-configuration). "*" keeps every annotation, but
	// on Secrets only keys named one by one (their kubectl
	// last-applied-configuration annotation holds the secret data).
	KeepAnnotations []string `json:"keepAnnotations,omitempty"`
}

// Watch selects which objects of one kind are cached. Every selector is
// applied by the API server, so objects outside it never reach metawatch.
type Watch struct {
	// Kind is a kind the API server serves, e.g. Pod or Deployment.
	Kind string `json:"kind"`
	// APIVersion pins the group/version, e.g. apps/v1. Optional for built-in kinds.
	APIVersion string `json:"apiVersion,omitempty"`
	// Namespaces limits a namespaced kind to these namespaces; empty means all.
	Namespaces []string `json:"namespaces,omitempty"`
	// LabelSelector, e.g. "app.kubernetes.io/part-of=shop".
	LabelSelector string `json:"labelSelector,omitempty"`
	// FieldSelector, e.g. "status.phase!=Succeeded"; the fields supported depend on the kind.
	FieldSelector string `json:"fieldSelector,omitempty"`
}

// Rule keeps labels and annotations of the objects of some watched kinds.
type Rule struct {
	// Name identifies the rule in metrics, Events and logs; unique.
	Name string `json:"name"`
	// Kinds the rule applies to; each must be the kind of a watch.
	Kinds []string `json:"kinds"`
	// Match limits the rule to objects whose labels match, evaluated in the controller.
	Match *Match `json:"match,omitempty"`

	// SetLabels and SetAnnotations are kept on the object, with these values.
	SetLabels      map[string]string `json:"setLabels,omitempty"`
	SetAnnotations map[string]string `json:"setAnnotations,omitempty"`
	// RemoveLabels and RemoveAnnotations are deleted, whoever set them.
	RemoveLabels      []string `json:"removeLabels,omitempty"`
	RemoveAnnotations []string `json:"removeAnnotations,omitempty"`
	// CopyFromNamespace keeps these keys equal to the object's Namespace.
	CopyFromNamespace *CopyFromNamespace `json:"copyFromNamespace,omitempty"`
	// CopyFromOwner keeps these keys equal to the object's nearest
	// controlling owner of the listed kinds (ownerReferences with
	// controller: true, followed through ReplicaSets and Jobs).
	CopyFromOwner *CopyFromOwner `json:"copyFromOwner,omitempty"`
	// RequireLabels and RequireAnnotations are audited only: a metric and an Event, never a write.
	RequireLabels      []string `json:"requireLabels,omitempty"`
	RequireAnnotations []string `json:"requireAnnotations,omitempty"`

	// AtCreation also applies the rule's setLabels, setAnnotations and
	// copyFromNamespace as objects of its kinds are created, by a
	// MutatingAdmissionPolicy metawatch keeps, so that their first version
	// carries the keys. The controller keeps them afterwards as for any rule.
	AtCreation bool `json:"atCreation,omitempty"`

	// Force takes ownership of keys another field manager owns with another value.
	Force bool `json:"force,omitempty"`
	// ReservedKeys opts in, key by key, to writing keys under the prefixes
	// Kubernetes reserves (kubernetes.io/, k8s.io/ and their subdomains).
	ReservedKeys []string `json:"reservedKeys,omitempty"`
}

// Match selects the objects a rule applies to.
type Match struct {
	LabelSelector string `json:"labelSelector,omitempty"`
}

// CopyFromOwner names the owner kinds to copy from and the keys to copy.
type CopyFromOwner struct {
	// Kinds are the owner kinds whose keys are copied, nearest first wins:
	// Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob.
	Kinds       []string `json:"kinds"`
	Labels      []string `json:"labels,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
}

// CopyFromNamespace names the Namespace labels and annotations to copy.
type CopyFromNamespace struct {
	Labels      []string `json:"labels,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
}
