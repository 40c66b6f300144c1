package check

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/config"
)

// verbOn is one verb on one resource, as RBAC names them.
type verbOn struct{ group, resource, verb string }

func (v verbOn) String() string {
	if v.group == "" {
		return v.verb + " " + v.resource
	}
	return v.verb + " " + v.resource + "." + v.group
}

// ownNeeds are what metawatch needs whatever the configuration: Events,
// the secure metrics endpoint's reviews, leader election and sharding Leases
// (in its namespace), and what every authenticated user may do.
var ownNeeds = []verbOn{
	{"events.k8s.io", "events", "create"}, {"events.k8s.io", "events", "patch"},
	{"", "events", "create"}, {"", "events", "patch"}, // leader election's Event on its Lease
	{"authentication.k8s.io", "tokenreviews", "create"}, {"authorization.k8s.io", "subjectaccessreviews", "create"},
	{"coordination.k8s.io", "leases", "get"}, {"coordination.k8s.io", "leases", "list"}, {"coordination.k8s.io", "leases", "create"},
	{"coordination.k8s.io", "leases", "update"}, {"coordination.k8s.io", "leases", "patch"}, {"coordination.k8s.io", "leases", "delete"},
	{"authorization.k8s.io", "selfsubjectaccessreviews", "create"}, {"authorization.k8s.io", "selfsubjectrulesreviews", "create"},
	{"authentication.k8s.io", "selfsubjectreviews", "create"},
	// From 1.37 (ClusterTrustBundle on by default) the bootstrap policy binds
	// system:cluster-trust-bundle-discovery to every ServiceAccount: a grant
	// the operator cannot take away, so not one to report.
	{"certificates.k8s.io", "clustertrustbundles", "get"}, {"certificates.k8s.io", "clustertrustbundles", "list"},
	{"certificates.k8s.io", "clustertrustbundles", "watch"},
	// The removal brake creates the ConfigMap of its record (RBAC cannot
	// grant create by name; get and patch are granted by name).
	{"", "configmaps", "create"},
	// The Pruner lists and deletes the admission policies the flags no
	// longer allow, whatever the configuration (admission.Pruner).
	{"admissionregistration.k8s.io", "mutatingadmissionpolicies", "get"}, {"admissionregistration.k8s.io", "mutatingadmissionpolicies", "list"},
	{"admissionregistration.k8s.io", "mutatingadmissionpolicies", "delete"}, {"admissionregistration.k8s.io", "mutatingadmissionpolicybindings", "get"},
	{"admissionregistration.k8s.io", "mutatingadmissionpolicybindings", "list"}, {"admissionregistration.k8s.io", "mutatingadmissionpolicybindings", "delete"},
}

// ownerGet is the get on the ClusterRole that owns the admission policies
// (--admission-policy-owner): needed with atCreation, granted by name.
var ownerGet = verbOn{"rbac.authorization.k8s.io", "clusterroles", "get"}

// selectorsConfigMapVerbs are what metawatch does to its selectors
// ConfigMap and to the removal brake's record, granted by name.
var selectorsConfigMapVerbs = []string{"get", "list", "watch", "patch"}

// reportVerbs are what --open-reports does to the OpenReports kinds
// (reports.Writer): apply (create and patch), list their metadata, delete.
var reportVerbs = []string{"list", "create", "patch", "delete"}

// reportNeeds adds, with --open-reports, what the reports' writer needs.
func reportNeeds(needs map[verbOn]bool, openReports bool) map[verbOn]bool {
	if !openReports {
		return needs
	}
	for _, resource := range []string{"reports", "clusterreports"} {
		for _, verb := range reportVerbs {
			needs[verbOn{"openreports.io", resource, verb}] = true
		}
	}
	return needs
}

// configNeeds are the verbs the configuration needs: list and watch of every
// watched kind, patch of every kind a rule writes.
func configNeeds(watches []config.ResolvedWatch, written writtenSet) map[verbOn]bool {
	needs := map[verbOn]bool{}
	for _, w := range watches {
		gr := w.Resource.GroupResource()
		needs[verbOn{gr.Group, gr.Resource, "list"}] = true
		needs[verbOn{gr.Group, gr.Resource, "watch"}] = true
		if written.of(w) {
			needs[verbOn{gr.Group, gr.Resource, "patch"}] = true
		}
	}
	return needs
}

// reviewRBAC reports what the identity holds in namespace (its cluster-wide
// grants and its Roles there) beyond what metawatch needs to run the
// configuration: least privilege, the counterpart of the access table's
// "nothing missing".
func reviewRBAC(ctx context.Context, out io.Writer, cs kubernetes.Interface, namespace string, needs map[verbOn]bool) error {
	grants, err := access.Grants(ctx, cs, namespace)
	if err != nil {
		return fmt.Errorf("reviewing RBAC: %w", err)
	}
	var spare []string
	for _, g := range grants {
		v := verbOn{g.Group, g.Resource, g.Verb}
		named := len(g.Names) > 0 && v.group == "" && v.resource == "configmaps" && slices.Contains(selectorsConfigMapVerbs, v.verb)
		needed := needs[v] && (v != ownerGet || len(g.Names) > 0)
		if needed || slices.Contains(ownNeeds, v) || named {
			continue
		}
		if s := v.String(); !slices.Contains(spare, s) {
			spare = append(spare, s)
		}
	}
	if len(spare) > 0 {
		return fmt.Errorf("the identity holds more than the configuration needs (namespace %s and cluster-wide): %s; remove it from its roles "+
			"(chart: rbac.kinds grants list and watch per kind, patch where write: true)", namespace, strings.Join(spare, ", "))
	}
	fmt.Fprintf(out, "RBAC: nothing beyond what the configuration needs (namespace %s and cluster-wide)\n", namespace)
	return nil
}

// reviewNamespace is where --rbac reviews Roles: the ServiceAccount's own
// namespace for --as system:serviceaccount:NS:NAME, else "default".
func reviewNamespace(as string) string {
	if rest, ok := strings.CutPrefix(as, "system:serviceaccount:"); ok {
		if ns, _, found := strings.Cut(rest, ":"); found {
			return ns
		}
	}
	return "default"
}

// chartKind is one entry of the chart's rbac.kinds value.
type chartKind struct {
	Kind     string `json:"kind"`
	APIGroup string `json:"apiGroup"`
	Resource string `json:"resource"`
	Write    bool   `json:"write,omitempty"`
}

// writeChartValues writes to path the chart values whose ClusterRole is what
// the configuration needs: each watched kind, write: true where a rule writes
// it (which also sets --writable-kinds).
func writeChartValues(path, source string, watches []config.ResolvedWatch, written writtenSet, atCreation bool) error {
	var values struct {
		RBAC struct {
			Kinds []chartKind `json:"kinds"`
		} `json:"rbac"`
		AtCreation *struct {
			Enabled bool `json:"enabled"`
		} `json:"atCreation,omitempty"`
	}
	if atCreation {
		values.AtCreation = &struct {
			Enabled bool `json:"enabled"`
		}{Enabled: true}
	}
	for _, w := range watches {
		gr := w.Resource.GroupResource()
		values.RBAC.Kinds = append(values.RBAC.Kinds, chartKind{Kind: w.GVK.Kind, APIGroup: gr.Group, Resource: gr.Resource, Write: written.of(w)})
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# The chart's RBAC for %s (metawatch check --chart-values): list and watch of each watched kind,\n"+
		"# patch and --writable-kinds for those with write: true; atCreation for rules with it. helm install/upgrade -f this file.\n", source)
	if err := os.WriteFile(path, append([]byte(header), data...), 0o644); err != nil { //nolint:gosec // a values file, read by helm
		return fmt.Errorf("--chart-values: %w", err)
	}
	return nil
}
