package seed

import (
	"bytes"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
)

// SameBut checks that copied is template as EtcdCopy copies it into another
// namespace: the same name, labels, annotations, spec, status and managers
// (their fields naming the copied owner's uid), in another namespace with a
// uid and an owner uid of its own.
func SameBut(template, copied *corev1.Pod) error {
	switch {
	case copied.Name != template.Name:
		return fmt.Errorf("name %s, want %s", copied.Name, template.Name)
	case copied.Namespace == template.Namespace:
		return fmt.Errorf("in the template's namespace %s", copied.Namespace)
	case copied.UID == template.UID || len(copied.UID) != len(template.UID):
		return fmt.Errorf("uid %s, want one of its own as long as the template's %s", copied.UID, template.UID)
	case !reflect.DeepEqual(copied.Labels, template.Labels):
		return fmt.Errorf("labels %v, want the template's %v", copied.Labels, template.Labels)
	case !reflect.DeepEqual(copied.Annotations, template.Annotations):
		return fmt.Errorf("annotations %v, want the template's %v", copied.Annotations, template.Annotations)
	case !reflect.DeepEqual(copied.Spec, template.Spec):
		return fmt.Errorf("spec differs from the template's")
	case !reflect.DeepEqual(copied.Status, template.Status):
		return fmt.Errorf("status differs from the template's")
	case len(copied.OwnerReferences) != len(template.OwnerReferences) || len(copied.OwnerReferences) == 0:
		return fmt.Errorf("owner references %v, want one like the template's %v", copied.OwnerReferences, template.OwnerReferences)
	case copied.OwnerReferences[0].UID == template.OwnerReferences[0].UID:
		return fmt.Errorf("owner uid %s is the template's owner's", copied.OwnerReferences[0].UID)
	}
	return sameManagers(template, copied)
}

func sameManagers(template, copied *corev1.Pod) error {
	if len(copied.ManagedFields) != len(template.ManagedFields) || len(copied.ManagedFields) < 2 {
		return fmt.Errorf("%d managedFields entries, want the template's %d (a creator and a status writer)", len(copied.ManagedFields), len(template.ManagedFields))
	}
	owner, templateOwner := []byte(copied.OwnerReferences[0].UID), []byte(template.OwnerReferences[0].UID)
	for i, m := range copied.ManagedFields {
		t := template.ManagedFields[i]
		if m.Manager != t.Manager || m.Operation != t.Operation || m.Subresource != t.Subresource || m.FieldsV1 == nil || t.FieldsV1 == nil {
			return fmt.Errorf("managedFields[%d] is %s %s %s, want the template's %s %s %s", i, m.Manager, m.Operation, m.Subresource, t.Manager, t.Operation, t.Subresource)
		}
		if want := bytes.ReplaceAll(t.FieldsV1.GetRawBytes(), templateOwner, owner); !bytes.Equal(m.FieldsV1.GetRawBytes(), want) {
			return fmt.Errorf("managedFields[%d] (%s) fields %s, want the template's with the owner's uid %s", i, m.Manager, m.FieldsV1.GetRawBytes(), want)
		}
	}
	return nil
}
