package rules_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/metawatch/metawatch/pkg/rules"
)

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestEvaluate(t *testing.T) {
	team := rules.Rule{Name: "team-from-namespace", CopyLabels: []string{"team", "cost-center"}, CopyAnnotations: []string{"owner"}}
	spot := rules.Rule{Name: "spot", SetLabels: map[string]string{"example.com/spot": "true"}}
	require := rules.Rule{Name: "require-owner", RequireLabels: []string{"app.kubernetes.io/name", "team"}, RequireAnnotations: []string{"owner"}}
	cleanup := rules.Rule{Name: "cleanup", RemoveLabels: []string{"legacy"}, RemoveAnnotations: []string{"old-note"}}
	forced := rules.Rule{Name: "forced", SetAnnotations: map[string]string{"example.com/managed": "yes"}, Force: true}
	ns := &rules.Metadata{Labels: map[string]string{"team": "shop", "other": "x"}, Annotations: map[string]string{"owner": "alice"}}

	cases := map[string]struct {
		rules []rules.Rule
		obj   rules.Metadata
		ns    *rules.Metadata
		want  rules.Result
	}{
		"no rules want nothing": {want: result()},
		"copy takes only the listed keys the namespace has": {
			rules: []rules.Rule{team}, ns: ns,
			want: with(result(), func(r *rules.Result) {
				r.Labels["team"] = rules.Owned{Value: "shop", Rule: "team-from-namespace"}
				r.Annotations["owner"] = rules.Owned{Value: "alice", Rule: "team-from-namespace"}
			}),
		},
		"copy without a namespace wants nothing": {rules: []rules.Rule{team}, want: result()},
		"set labels a node": {
			rules: []rules.Rule{spot},
			want:  with(result(), func(r *rules.Result) { r.Labels["example.com/spot"] = rules.Owned{Value: "true", Rule: "spot"} }),
		},
		"a rule that does not match wants nothing": {
			rules: []rules.Rule{withMatch(spot, mustSelector(t, "node.kubernetes.io/capacity-type=spot"))},
			obj:   rules.Metadata{Labels: map[string]string{"node.kubernetes.io/capacity-type": "on-demand"}},
			want:  result(),
		},
		"a rule that matches applies": {
			rules: []rules.Rule{withMatch(spot, mustSelector(t, "node.kubernetes.io/capacity-type=spot"))},
			obj:   rules.Metadata{Labels: map[string]string{"node.kubernetes.io/capacity-type": "spot"}},
			want:  with(result(), func(r *rules.Result) { r.Labels["example.com/spot"] = rules.Owned{Value: "true", Rule: "spot"} }),
		},
		"remove names keys whether or not present": {
			rules: []rules.Rule{cleanup},
			want: with(result(), func(r *rules.Result) {
				r.RemoveLabels["legacy"] = "cleanup"
				r.RemoveAnnotations["old-note"] = "cleanup"
			}),
		},
		"force is carried with the key": {
			rules: []rules.Rule{forced},
			want: with(result(), func(r *rules.Result) {
				r.Annotations["example.com/managed"] = rules.Owned{Value: "yes", Rule: "forced", Force: true}
			}),
		},
		"require reports what is missing": {
			rules: []rules.Rule{require}, obj: rules.Metadata{Labels: map[string]string{"team": "shop"}},
			want: with(result(), func(r *rules.Result) {
				r.Violations = []rules.Violation{{Rule: "require-owner", MissingLabels: []string{"app.kubernetes.io/name"}, MissingAnnotations: []string{"owner"}}}
			}),
		},
		"require met is no violation": {
			rules: []rules.Rule{require},
			obj:   rules.Metadata{Labels: map[string]string{"team": "a", "app.kubernetes.io/name": "b"}, Annotations: map[string]string{"owner": "c"}},
			want:  result(),
		},
		"require does not count what other rules would set": {
			rules: []rules.Rule{team, require}, ns: ns, obj: rules.Metadata{Labels: map[string]string{"app.kubernetes.io/name": "b"}},
			want: with(result(), func(r *rules.Result) {
				r.Labels["team"] = rules.Owned{Value: "shop", Rule: "team-from-namespace"}
				r.Annotations["owner"] = rules.Owned{Value: "alice", Rule: "team-from-namespace"}
				r.Violations = []rules.Violation{{Rule: "require-owner", MissingLabels: []string{"team"}, MissingAnnotations: []string{"owner"}}}
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := rules.Evaluate(tc.rules, tc.obj, rules.Sources{Namespace: tc.ns})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Evaluate =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func result() rules.Result {
	return rules.Result{Labels: map[string]rules.Owned{}, Annotations: map[string]rules.Owned{}, RemoveLabels: map[string]string{}, RemoveAnnotations: map[string]string{}}
}

func with(r rules.Result, f func(*rules.Result)) rules.Result {
	f(&r)
	return r
}

func withMatch(r rules.Rule, sel labels.Selector) rules.Rule {
	r.Match = sel
	return r
}

func TestEvaluateCopiesFromTheNearestOwnerOfItsKinds(t *testing.T) {
	fromWorkload := rules.Rule{Name: "cost-from-workload", OwnerKinds: []string{"Deployment", "CronJob"}, OwnerLabels: []string{"cost-center"}, OwnerAnnotations: []string{"owner"}}
	replicaSet := rules.Owner{Kind: "ReplicaSet", Metadata: rules.Metadata{Labels: map[string]string{"cost-center": "from-the-replicaset"}}}
	deployment := rules.Owner{Kind: "Deployment", Metadata: rules.Metadata{Labels: map[string]string{"cost-center": "7", "app": "web"}, Annotations: map[string]string{"owner": "alice"}}}
	job := rules.Owner{Kind: "Job", Metadata: rules.Metadata{Labels: map[string]string{"cost-center": "from-the-job"}}}
	cronJob := rules.Owner{Kind: "CronJob", Metadata: rules.Metadata{Labels: map[string]string{"cost-center": "9"}}}
	copied := func(labels, annotations map[string]string) rules.Result {
		return with(result(), func(r *rules.Result) {
			for k, v := range labels {
				r.Labels[k] = rules.Owned{Value: v, Rule: "cost-from-workload"}
			}
			for k, v := range annotations {
				r.Annotations[k] = rules.Owned{Value: v, Rule: "cost-from-workload"}
			}
		})
	}
	cases := map[string]struct {
		owners []rules.Owner
		want   rules.Result
	}{
		"through the ReplicaSet to the Deployment": {owners: []rules.Owner{replicaSet, deployment},
			want: copied(map[string]string{"cost-center": "7"}, map[string]string{"owner": "alice"})},
		"through the Job to the CronJob":                {owners: []rules.Owner{job, cronJob}, want: copied(map[string]string{"cost-center": "9"}, nil)},
		"an owner of no listed kind is not copied from": {owners: []rules.Owner{replicaSet}, want: result()},
		"a Job without a CronJob is not copied from":    {owners: []rules.Owner{job}, want: result()},
		"no owner wants nothing":                        {want: result()},
		"a key the owner lacks is not wanted": {owners: []rules.Owner{{Kind: "Deployment", Metadata: rules.Metadata{Labels: map[string]string{"app": "web"}}}},
			want: result()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := rules.Evaluate([]rules.Rule{fromWorkload}, rules.Metadata{}, rules.Sources{Owners: tc.owners})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Evaluate =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}
