package admission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
)

// InstallationLabel tells apart the pairs of metawatch installations that
// read different configurations: its value is InstallationValue of the
// configuration's source, which ConfigurationAnnotation spells out.
const (
	InstallationLabel       = "metawatch.dev/installation"
	ConfigurationAnnotation = "metawatch.dev/configuration"
)

// InstallationValue is the InstallationLabel of the pairs made from the
// configuration source names (a ConfigMap's namespace/name): a hash, as a
// source may be longer than a label value.
func InstallationValue(source string) string {
	sum := sha256.Sum256([]byte(source))
	return hex.EncodeToString(sum[:10])
}

// grantHint is how to give metawatch the permissions the pairs need.
const grantHint = "grant get, list, create, patch and delete on mutatingadmissionpolicies and mutatingadmissionpolicybindings " +
	"(chart: atCreation.enabled: true)"

// made are this installation's policies and bindings in the cluster, by name.
type made struct {
	policies map[string]*admissionregistrationv1.MutatingAdmissionPolicy
	bindings map[string]*admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// list lists the pairs metawatch made for this installation.
func (s *Syncer) list(ctx context.Context) (made, error) {
	return listMade(ctx, s.Reader, s.Installation)
}

// listMade lists the pairs metawatch made for the installation configured
// by source.
func listMade(ctx context.Context, reader client.Reader, source string) (made, error) {
	ours := client.MatchingLabels{ManagedByLabel: ManagedBy, InstallationLabel: InstallationValue(source)}
	var policies admissionregistrationv1.MutatingAdmissionPolicyList
	if err := reader.List(ctx, &policies, ours); err != nil {
		return made{}, err
	}
	var bindings admissionregistrationv1.MutatingAdmissionPolicyBindingList
	if err := reader.List(ctx, &bindings, ours); err != nil {
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

func (s *Syncer) mine(obj client.Object) bool {
	return obj.GetLabels()[InstallationLabel] == InstallationValue(s.Installation)
}

// stamp labels obj as this installation's, owned by owners.
func (s *Syncer) stamp(obj client.Object, owners []metav1.OwnerReference) {
	obj.GetLabels()[InstallationLabel] = InstallationValue(s.Installation)
	obj.GetAnnotations()[ConfigurationAnnotation] = s.Installation
	obj.SetOwnerReferences(owners)
}

// put makes r's policy and binding as they should be: created if missing,
// applied over this installation's own otherwise, unless this Syncer wrote
// them as they are.
func (s *Syncer) put(ctx context.Context, r Rule, existing made, owners []metav1.OwnerReference) error {
	policy, binding, err := Policy(r)
	if err != nil {
		return lasting(err)
	}
	s.stamp(policy, owners)
	s.stamp(binding, owners)
	var listedPolicy, listedBinding client.Object
	if p, ok := existing.policies[policy.Name]; ok {
		listedPolicy = p
	}
	if b, ok := existing.bindings[binding.Name]; ok {
		listedBinding = b
	}
	if err := s.write(ctx, policy, listedPolicy); err != nil {
		if apierrors.IsInvalid(err) && listedBinding != nil {
			// The old version would keep applying what the rule no longer
			// wants: without its binding, it applies nothing.
			err = errors.Join(err, s.remove(ctx, "MutatingAdmissionPolicyBinding", listedBinding))
		}
		return fmt.Errorf("MutatingAdmissionPolicy %s: %w", policy.Name, err)
	}
	if err := s.write(ctx, binding, listedBinding); err != nil {
		return fmt.Errorf("MutatingAdmissionPolicyBinding %s: %w", binding.Name, err)
	}
	return nil
}

// write creates obj if listed is nil (none of this installation's exists),
// else replaces the listed object's spec, labels and annotations with
// obj's by an update on the listed version: a replica that stalled past
// its claim and sends an old version late is refused once another wrote
// since, or deleted it; and a field added by hand goes too (an apply would
// leave what another manager owns). An object still as this Syncer last
// wrote it is left alone.
func (s *Syncer) write(ctx context.Context, obj, listed client.Object) error {
	kindName := obj.GetObjectKind().GroupVersionKind().Kind + "/" + obj.GetName()
	if listed != nil && s.unchanged(kindName, listed) {
		return nil
	}
	if listed != nil {
		obj = replaced(listed, obj)
	}
	// Written as the guard's identity: the installation's field manager.
	w, key := authority.NewWriter(s.Client, s.Guard), guardKey(obj.GetName())
	var err error
	if listed == nil {
		err = w.Create(ctx, key, obj)
	} else {
		err = w.Update(ctx, key, obj)
	}
	switch outcome := authority.Classify(err); {
	case outcome == authority.Written:
		s.remember(kindName, obj.GetResourceVersion())
		return nil
	case outcome == authority.NotSent:
		return err
	case outcome == authority.SendSoon, apierrors.IsConflict(err), listed != nil && outcome == authority.Gone:
		return errRetrySoon // another wrote or deleted it since it was listed: list again
	case apierrors.IsAlreadyExists(err):
		return s.alreadyExists(ctx, obj)
	case apierrors.IsInvalid(err):
		return lasting(fmt.Errorf("the API server refused it: %w", err))
	case apierrors.IsForbidden(err):
		return lasting(fmt.Errorf("%w: %s", err, grantHint))
	}
	return err
}

// replaced is listed with desired's spec and owners, and desired's labels
// and annotations added to its own: what an update writes (a pair an older
// metawatch made gets its owner so).
func replaced(listed, desired client.Object) client.Object {
	out := listed.DeepCopyObject().(client.Object)
	switch o := out.(type) {
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		o.Spec = desired.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		o.Spec = desired.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec
	}
	out.SetOwnerReferences(desired.GetOwnerReferences())
	out.SetLabels(merged(out.GetLabels(), desired.GetLabels()))
	out.SetAnnotations(merged(out.GetAnnotations(), desired.GetAnnotations()))
	return out
}

func merged(base, over map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}

func (s *Syncer) unchanged(kindName string, listed client.Object) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written[kindName] == listed.GetResourceVersion()
}

func (s *Syncer) remember(kindName, resourceVersion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == nil {
		s.written = map[string]string{}
	}
	s.written[kindName] = resourceVersion
}

// alreadyExists tells an object of the same name that is not this
// installation's (refused: it is not metawatch's to change) from one made
// since the list (written on the next pass).
func (s *Syncer) alreadyExists(ctx context.Context, obj client.Object) error {
	current := obj.DeepCopyObject().(client.Object)
	if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return err
	}
	switch {
	case current.GetLabels()[ManagedByLabel] != ManagedBy:
		return lasting(fmt.Errorf("one of this name exists that metawatch did not make (it lacks the label %s=%s): delete it, or rename the rule",
			ManagedByLabel, ManagedBy))
	case current.GetLabels()[InstallationLabel] == "":
		return lasting(fmt.Errorf("one of this name exists that an older metawatch made, without the label %s: delete it, and metawatch makes it again", InstallationLabel))
	case !s.mine(current):
		return lasting(fmt.Errorf("another metawatch installation, configured by %s, has a rule of this name: rename the rule in one of them",
			current.GetAnnotations()[ConfigurationAnnotation]))
	}
	return errRetrySoon
}

// removeStale deletes this installation's bindings and policies whose rule
// is gone (bindings first: a policy without one applies to nothing).
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
	err := deleteListed(ctx, s.Guard, s.Client, obj)
	if err == nil {
		s.Log.Info("deleted the admission policy of a removed rule", "kind", kind, "name", obj.GetName())
	}
	switch authority.Classify(err) {
	case authority.Written, authority.Gone, authority.NotSent:
		return nil
	case authority.SendSoon, authority.Stale, authority.Conflict:
		return errRetrySoon // changed since the list: listed and deleted again shortly
	}
	return fmt.Errorf("deleting %s %s: %w", kind, obj.GetName(), err)
}

// deleteListed deletes obj through guard (under the claim of the pair's
// key) if it is still the version listed: a replica that stalled past its
// claim cannot delete what another made since.
func deleteListed(ctx context.Context, guard authority.Guard, c client.Writer, obj client.Object) error {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	return guard.Write(ctx, guardKey(obj.GetName()), func(ctx context.Context) error {
		return c.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	})
}
