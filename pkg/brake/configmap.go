package brake

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
)

// recordKey is the ConfigMap data key that holds the record, as JSON.
const recordKey = "record.json"

// ConfigMapStore keeps the record in a ConfigMap of the installation's
// namespace: the selectors ConfigMap's neighbour, which the operator does
// not edit (an annotation on the selectors ConfigMap would be lost to a
// kubectl replace, and a count lost is a bound granted again). Every write
// is a compare-and-swap on the ConfigMap's resourceVersion, and passes
// Guard (the leader's claim, when one is elected): a replica paused past
// its Lease does not write it as it resumes.
type ConfigMapStore struct {
	Key types.NamespacedName
	// Reader reads the ConfigMap from the API server (not a cache: a
	// compare-and-swap needs the stored version).
	Reader client.Reader
	Client client.Client
	Guard  authority.Guard
}

// String names the ConfigMap.
func (s *ConfigMapStore) String() string { return "ConfigMap " + s.Key.String() }

// Load reads the record from the ConfigMap (none yet if it does not exist).
func (s *ConfigMapStore) Load(ctx context.Context) (Record, string, error) {
	var cm corev1.ConfigMap
	if err := s.Reader.Get(ctx, s.Key, &cm); apierrors.IsNotFound(err) {
		return Record{}, "", nil
	} else if err != nil {
		return Record{}, "", err
	}
	var r Record
	if raw := cm.Data[recordKey]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			// Never read as "nothing counted": that would grant the bound again.
			return Record{}, "", fmt.Errorf("its data %s is not a record metawatch wrote (%w): delete the ConfigMap to begin the count again", recordKey, err)
		}
	}
	return r, cm.ResourceVersion, nil
}

// Save writes the record: creates the ConfigMap for version "", else a
// merge patch with the resourceVersion as a precondition.
func (s *ConfigMapStore) Save(ctx context.Context, r Record, version string) (string, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Key.Namespace, Name: s.Key.Name,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "metawatch"}}}
	err = s.Guard.Write(ctx, "", func(ctx context.Context) error {
		if version == "" {
			cm.Data = map[string]string{recordKey: string(raw)}
			return s.Client.Create(ctx, cm)
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": version}, "data": map[string]string{recordKey: string(raw)}})
		if err != nil {
			return err
		}
		return s.Client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	})
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return "", ErrConflict
	}
	return cm.ResourceVersion, err
}
