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

// action is what a rule does with a key it writes.
type action string

const (
	// actionSet keeps the key at a fixed value (setLabels, setAnnotations).
	actionSet action = "set"
	// actionRemove deletes the key, whoever set it (removeLabels, removeAnnotations).
	actionRemove action = "remove"
	// actionCopy keeps the key equal to the object's Namespace (copyFromNamespace).
	actionCopy action = "copy"
	// actionCopyOwner keeps the key equal to the object's controlling owner (copyFromOwner).
	actionCopyOwner action = "copy-owner"
)
