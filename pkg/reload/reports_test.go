package reload_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/reports"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// With --open-reports, the namespace's Report on the real CRDs follows what
// the rules find, for labels and annotations: a requirement failed (fail),
// a key another field manager holds (warn: conflict), removals the brake
// holds (warn: removal-held), and the objects as wanted counted as passes
// only. Once nothing is found there any more, the Report is deleted.
func TestTheReportFollowsWhatTheRulesFind(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.InstallOpenReports(t, cp.Config, "../..")
	rc := testkit.OpenReportsClient(t, cp.Config)
	name := reports.Names{Identity: authority.NewIdentity("metawatch", "")}.Name()
	for kts, kt := range testkit.KeyTypes {
		t.Run(kts, func(t *testing.T) {
			ns := "reports-" + kts
			testkit.Namespace(t, c, ns, nil)
			pod := func(name string, keys map[string]string) {
				p := testkit.Pod(t, c, ns, name, nil)
				for k, v := range keys {
					testkit.MergePatch(t, c, p, "kubectl-"+kt.Kubectl, kt.Patch(k, &v))
				}
			}
			pod("bare", nil)
			pod("held", map[string]string{"owner": "jo"})
			pod("conflict", map[string]string{"owner": "jo"})
			silver := "silver"
			testkit.MergePatch(t, c, podObject(ns, "conflict"), "other-controller", kt.Patch("tier", &silver))
			pod("fine", map[string]string{"owner": "jo", "tier": "gold"})
			for i := range 3 { // one stale key removed, two held by the brake (its bound is 1)
				pod(fmt.Sprintf("stale-%d", i), map[string]string{"owner": "jo", "tier": "gold", "stale": "yes"})
			}
			watch := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: owner, kinds: [Pod], %s: [owner]}\n", ns, kt.Require)
			rules := fmt.Sprintf("- {name: tier, kinds: [Pod], %s: {tier: gold}}\n- {name: stale, kinds: [Pod], %s: [stale]}\n", kt.Set, kt.Remove)
			kubectlApply(t, selectors(ns, watch+rules))
			startInstance(t, cp.Config, ns+"/selectors", func(r *reload.Reloader) {
				r.Settings.OpenReports = true
				r.Settings.RemovalBrake = brake.Bound{Objects: 1, Window: time.Hour}
			})

			// bare fails; conflict and two stale pods warn; held (its tier
			// set by metawatch), fine and the stale pod let through pass.
			want := []string{"bare owner required-metadata fail", "conflict tier conflict warn", "removal-held warn", "removal-held warn"}
			var r openreports.Report
			var got []string
			testkit.WaitFor(t, "the Report to say 1 fail, 3 warn, 3 pass", testkit.Timeout, func() bool {
				if err := rc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &r); err != nil {
					return false
				}
				got = results(r)
				return r.Summary.Fail == 1 && r.Summary.Warn == 3 && r.Summary.Pass == 3 && fmt.Sprint(got) == fmt.Sprint(want)
			})
			if r.Source != reports.Source || r.Labels[reports.LabelManagedBy] != reports.Source || r.Configuration == nil || r.Configuration.Limits.MaxResults != reports.DefaultMaxResults {
				t.Errorf("Report %s/%s: source %q, labels %v, configuration %+v; want source and managed-by metawatch, maxResults %d",
					r.Namespace, r.Name, r.Source, r.Labels, r.Configuration, reports.DefaultMaxResults)
			}

			// The requirement met, the other controller agreeing, the held
			// removals approved with the change the results name: nothing
			// to report, and the Report goes.
			ann, gold := "ann", "gold"
			testkit.MergePatch(t, c, podObject(ns, "bare"), "kubectl-"+kt.Kubectl, kt.Patch("owner", &ann))
			testkit.MergePatch(t, c, podObject(ns, "conflict"), "other-controller", kt.Patch("tier", &gold))
			change := ""
			for _, res := range r.Results {
				if res.Rule == reports.CheckRemovalHeld {
					change = res.Properties["change"]
				}
			}
			if change == "" {
				t.Fatalf("no removal-held result names the change to approve: %+v", r.Results)
			}
			kubectl(t, "annotate", "configmap", "-n", ns, "selectors", "--overwrite", brake.AllowRemovals+"="+change)
			testkit.WaitFor(t, "the Report to be deleted", testkit.Timeout, func() bool {
				return apierrors.IsNotFound(rc.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &r))
			})
		})
	}
}

// results are a Report's results as "object policy rule result" (the
// removal brake's without object and policy: which pods it holds is its
// order's), sorted.
func results(r openreports.Report) []string {
	var out []string
	for _, res := range r.Results {
		if res.Rule == reports.CheckRemovalHeld {
			out = append(out, res.Rule+" "+string(res.Result))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", res.Subjects[0].Name, res.Policy, res.Rule, res.Result))
	}
	sort.Strings(out)
	return out
}
