package config

// MetadataMap is the map of an object's metadata a key lives in. Rules read
// and write these two only.
type MetadataMap string

// The two maps rules read and write.
const (
	Labels      MetadataMap = "label"
	Annotations MetadataMap = "annotation"
)

// Plural is the map's name in a sentence about several keys, and in the
// configuration's field names (setLabels, copyFromNamespace.annotations).
func (m MetadataMap) Plural() string { return string(m) + "s" }

// Of returns the map of obj's labels or annotations.
func (m MetadataMap) Of(labels, annotations map[string]string) map[string]string {
	if m == Labels {
		return labels
	}
	return annotations
}

// Action is what a rule does with a key it writes.
type Action string

const (
	// Set keeps the key at a fixed value (setLabels, setAnnotations).
	Set Action = "set"
	// Remove deletes the key, whoever set it (removeLabels, removeAnnotations).
	Remove Action = "remove"
	// Copy keeps the key equal to the object's Namespace (copyFromNamespace).
	Copy Action = "copy"
)
