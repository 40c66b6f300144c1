package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/config"
)

// atCreationRules names the rules with atCreation.
func atCreationRules(conf *config.Config) []string {
	var names []string
	for _, r := range conf.Rules {
		if r.AtCreation {
			names = append(names, r.Name)
		}
	}
	return names
}

// checkPolicies has the API server check, in a dry run, the admission
// policies and bindings metawatch would make for the rules with atCreation:
// it validates them and compiles their CEL. A server without the API is a
// warning (metawatch runs those rules without atCreation), a policy the
// server refuses or one of the same name metawatch did not make an error.
// The dry runs apply as fieldManager, as metawatch writes the policies.
func checkPolicies(ctx context.Context, out io.Writer, cfg *rest.Config, cs kubernetes.Interface, fieldManager string, rules []admission.Rule) error {
	if len(rules) == 0 {
		return nil
	}
	if !servesPolicies(cs) {
		fmt.Fprintf(out, "warning: the cluster does not serve MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.36 and later): "+
			"metawatch runs %s without atCreation\n", ruleNames(rules))
		return nil
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	var problems []string
	for _, r := range rules {
		if err := dryRunPolicy(ctx, c, fieldManager, r); err != nil {
			problems = append(problems, fmt.Sprintf("rule %q: %v", r.Name, err))
			continue
		}
		fmt.Fprintf(out, "rule %s: MutatingAdmissionPolicy and binding %s accepted by the server (dry run, CEL compiled)\n", r.Name, admission.Name(r.Name))
	}
	if len(problems) > 0 {
		return fmt.Errorf("admission policies (atCreation): %s", strings.Join(problems, "; "))
	}
	return nil
}

// servesPolicies is admission.Served; check counts an unanswered discovery
// as not served (a warning).
func servesPolicies(cs kubernetes.Interface) bool {
	served, err := admission.Served(cs.Discovery())
	return err == nil && served
}

func dryRunPolicy(ctx context.Context, c client.Client, fieldManager string, r admission.Rule) error {
	policy, binding, err := admission.Policy(r)
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{policy, binding} {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		current := obj.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), current)
		if err == nil && current.GetLabels()[admission.ManagedByLabel] != admission.ManagedBy {
			return fmt.Errorf("a %s named %s exists that metawatch did not make (it lacks the label %s=%s): delete it, or rename the rule",
				kind, obj.GetName(), admission.ManagedByLabel, admission.ManagedBy)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading %s %s: %w", kind, obj.GetName(), err)
		}
		body, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		if err := c.Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body), client.DryRunAll, client.ForceOwnership,
			client.FieldOwner(fieldManager)); err != nil {
			return fmt.Errorf("the server refuses its %s: %w", kind, err)
		}
	}
	return nil
}

func ruleNames(rules []admission.Rule) string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = fmt.Sprintf("%q", r.Name)
	}
	return "rules " + strings.Join(names, ", ")
}

// policyAccess reports what the identity lacks of what metawatch does to
// admission policies, when a rule has atCreation.
func policyAccess(ctx context.Context, cs kubernetes.Interface, conf *config.Config) ([]string, error) {
	if len(atCreationRules(conf)) == 0 {
		return nil, nil
	}
	var denied []string
	for _, resource := range admission.Resources {
		for _, verb := range admission.Verbs {
			ok, err := access.CanI(ctx, cs, verb, admissionregistrationv1.SchemeGroupVersion.WithResource(resource), "")
			if err != nil {
				return nil, err
			}
			if !ok {
				denied = append(denied, fmt.Sprintf("%s %s.%s (atCreation; chart: atCreation.enabled: true)", verb, resource, admissionregistrationv1.GroupName))
			}
		}
	}
	return denied, nil
}

// policyNeeds adds what atCreation needs to needs.
func policyNeeds(needs map[verbOn]bool, conf *config.Config) map[verbOn]bool {
	if len(atCreationRules(conf)) == 0 {
		return needs
	}
	for _, resource := range admission.Resources {
		for _, verb := range admission.Verbs {
			needs[verbOn{admissionregistrationv1.GroupName, resource, verb}] = true
		}
	}
	needs[ownerGet] = true
	return needs
}
