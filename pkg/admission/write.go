package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/controller"
)

// made are metawatch's policies and bindings in the cluster, by name.
type made struct {
	policies map[string]*admissionregistrationv1.MutatingAdmissionPolicy
	bindings map[string]*admissionregistrationv1.MutatingAdmissionPolicyBinding
}

func (s *Syncer) list(ctx context.Context) (made, error) {
	ours := client.MatchingLabels{ManagedByLabel: ManagedBy}
	var policies admissionregistrationv1.MutatingAdmissionPolicyList
	if err := s.Reader.List(ctx, &policies, ours); err != nil {
		return made{}, err
	}
	var bindings admissionregistrationv1.MutatingAdmissionPolicyBindingList
	if err := s.Reader.List(ctx, &bindings, ours); err != nil {
		return made{}, err
	}
	m := made{policies: map[string]*admissionregistrationv1.MutatingAdmissionPolicy{}, bindings: map[string]*admissionregistrationv1.MutatingAdmissionPolicyBinding{}}
	for i := range policies.Items {
		m.policies[policies.Items[i].Name] = &policies.Items[i]
	}
	for i := range bindings.Items {
		m.bindings[bindings.Items[i].Name] = &bindings.Items[i]
	}
	return m, nil
}

// put makes r's policy and binding as they should be: created if missing,
// applied over metawatch's own otherwise.
func (s *Syncer) put(ctx context.Context, r Rule, existing made) error {
	policy, binding, err := Policy(r)
	if err != nil {
		return err
	}
	key := types.UID(guardKey(policy.Name))
	var policyRV, bindingRV string
	if p, ok := existing.policies[policy.Name]; ok {
		policyRV = p.ResourceVersion
	}
	if b, ok := existing.bindings[binding.Name]; ok {
		bindingRV = b.ResourceVersion
	}
	if err := s.write(ctx, key, policy, policyRV); err != nil {
		return fmt.Errorf("MutatingAdmissionPolicy %s: %w", policy.Name, err)
	}
	if err := s.write(ctx, key, binding, bindingRV); err != nil {
		return fmt.Errorf("MutatingAdmissionPolicyBinding %s: %w", binding.Name, err)
	}
	return nil
}

// write creates obj if rv is "" (none of metawatch's exists), else applies
// it with rv as a precondition: a replica that stalled past its claim and
// sends an old version late is refused once another wrote since.
func (s *Syncer) write(ctx context.Context, key types.UID, obj client.Object, rv string) error {
	err := s.Guard.Write(ctx, key, func(ctx context.Context) error {
		if rv == "" {
			return s.Client.Create(ctx, obj, client.FieldOwner(controller.FieldManager))
		}
		obj.SetResourceVersion(rv)
		body, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		return s.Client.Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(controller.FieldManager), client.ForceOwnership)
	})
	switch {
	case err == nil, controller.NotWritten(err):
		return err
	case controller.RetrySoon(err), apierrors.IsConflict(err):
		return errRetrySoon // another wrote it since it was listed: list again
	case apierrors.IsAlreadyExists(err):
		return s.alreadyExists(ctx, obj)
	case apierrors.IsInvalid(err):
		return fmt.Errorf("the API server refused it: %w", err)
	}
	return err
}

// alreadyExists tells an object of the same name that metawatch did not
// make (refused: it is not metawatch's to change) from one of its own made
// since the list (written on the next pass).
func (s *Syncer) alreadyExists(ctx context.Context, obj client.Object) error {
	current := obj.DeepCopyObject().(client.Object)
	if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return err
	}
	if current.GetLabels()[ManagedByLabel] == ManagedBy {
		return errRetrySoon
	}
	return fmt.Errorf("one of this name exists that metawatch did not make (it lacks the label %s=%s): delete it, or rename the rule", ManagedByLabel, ManagedBy)
}

// removeStale deletes metawatch's bindings and policies whose rule is gone
// (bindings first: a policy without one applies to nothing).
func (s *Syncer) removeStale(ctx context.Context, existing made) error {
	wanted := map[string]bool{}
	for _, r := range s.Rules {
		wanted[Name(r.Name)] = true
	}
	var errs []error
	for name, b := range existing.bindings {
		if !wanted[name] {
			errs = append(errs, s.remove(ctx, "MutatingAdmissionPolicyBinding", b))
		}
	}
	for name, p := range existing.policies {
		if !wanted[name] {
			errs = append(errs, s.remove(ctx, "MutatingAdmissionPolicy", p))
		}
	}
	return errors.Join(errs...)
}

// remove deletes obj (of kind) if it is still the version listed.
func (s *Syncer) remove(ctx context.Context, kind string, obj client.Object) error {
	name, uid, rv := obj.GetName(), obj.GetUID(), obj.GetResourceVersion()
	err := s.Guard.Write(ctx, types.UID(guardKey(name)), func(ctx context.Context) error {
		return s.Client.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	})
	if err == nil {
		s.Log.Info("deleted the admission policy of a removed rule", "kind", kind, "name", name)
	}
	if err == nil || apierrors.IsNotFound(err) || controller.NotWritten(err) {
		return nil
	}
	return fmt.Errorf("deleting %s %s: %w", kind, name, err)
}
