package config

// DataKey is the ConfigMap data key that holds the configuration.
const DataKey = "config.yaml"

// Config is the content of the selectors ConfigMap's config.yaml.
type Config struct {
	// Watches are the kinds to cache, one entry per kind.
	Watches []Watch `json:"watches"`
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
