package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
)

// A rule with atCreation writes at admission only what the controller will
// see and keep: its kinds' watches must be expressible there, and its match
// must not read a label another rule writes.
func TestAtCreationAgainstWatchesAndOtherRules(t *testing.T) {
	cases := map[string]struct {
		conf string
		want []string // empty: valid
	}{
		"a watch narrowed by namespaces, labels and the object's namespace and name": {
			conf: "watches:\n- kind: Pod\n  namespaces: [shop]\n  labelSelector: 'app in (web), !skip'\n  fieldSelector: metadata.namespace!=kube-system,metadata.name!=probe\n" +
				"rules:\n- {name: a, kinds: [Pod], atCreation: true, setLabels: {x: v}}\n",
		},
		"a pod watch's field selector on the phase and the node": {
			conf: "watches:\n- kind: Pod\n  fieldSelector: status.phase!=Succeeded,spec.nodeName!=retired\nrules:\n- {name: a, kinds: [Pod], atCreation: true, setLabels: {x: v}}\n",
		},
		"a watch's field selector on a field admission does not know": {
			conf: "watches:\n- kind: Pod\n  fieldSelector: status.podIP!=10.0.0.1\nrules:\n- {name: a, kinds: [Pod], atCreation: true, setLabels: {x: v}}\n",
			want: []string{`watches[0].fieldSelector: Invalid value: "status.podIP!=10.0.0.1": rule "a" (rules[0]) has atCreation`,
				"admission does not know status.podIP as the watch will see it",
				"remove atCreation from the rule, or status.podIP from the fieldSelector (a Pod watch can use metadata.name, metadata.namespace, spec.nodeName, spec.restartPolicy, spec.schedulerName, status.phase)"},
		},
		"the same field selector on a kind of a rule without atCreation": {
			conf: "watches:\n- kind: Pod\n  fieldSelector: status.podIP!=10.0.0.1\n- kind: Deployment\nrules:\n- {name: a, kinds: [Deployment], atCreation: true, setLabels: {x: v}}\n",
		},
		"a watch's label selector with a numeric comparison": {
			conf: "watches:\n- kind: Pod\n  labelSelector: gen>3\nrules:\n- {name: a, kinds: [Pod], atCreation: true, setLabels: {x: v}}\n",
			want: []string{`watches[0].labelSelector: Invalid value: "gen>3": with atCreation, the match is evaluated at admission`},
		},
		"a match on a label another rule sets": {
			conf: "watches:\n- kind: Pod\nrules:\n- {name: sandbox, kinds: [Pod], atCreation: true, match: {labelSelector: '!env'}, setLabels: {sandbox: 'true'}}\n" +
				"- {name: env, kinds: [Pod], setLabels: {env: prod}}\n",
			want: []string{`rules[0].match.labelSelector: Invalid value: "!env": with atCreation, the match is evaluated at admission, where the label env is not yet as rule "env" (rules[1].setLabels[env]) sets it to "prod"`,
				"match on a label no rule writes, or remove atCreation"},
		},
		"a match on a label another rule copies, on a shared kind": {
			conf: "watches:\n- kind: Pod\n- kind: Deployment\nrules:\n- {name: a, kinds: [Pod], atCreation: true, match: {labelSelector: 'team=red'}, setLabels: {x: v}}\n" +
				"- {name: b, kinds: [Deployment, Pod], copyFromNamespace: {labels: [team]}}\n",
			want: []string{`rules[0].match.labelSelector`, `rule "b" (rules[1].copyFromNamespace.labels[0]) copies it from the namespace`},
		},
		"a match on a label another rule writes on another kind": {
			conf: "watches:\n- kind: Pod\n- kind: Deployment\nrules:\n- {name: a, kinds: [Pod], atCreation: true, match: {labelSelector: '!env'}, setLabels: {x: v}}\n" +
				"- {name: b, kinds: [Deployment], setLabels: {env: prod}}\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { parsesOrSays(t, tc.conf, tc.want) })
	}
}

// parsesOrSays checks that conf parses (want empty), or that Parse's error
// says every part of want.
func parsesOrSays(t *testing.T, conf string, want []string) {
	t.Helper()
	_, err := config.Parse([]byte(conf))
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Parse accepted:\n%s", conf)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
}

// atCreation accepts an allow-list of a rule's fields: any other field set
// (each write action only the controller makes, and any action added to the
// rule later, until the admission policy learns it) refuses the rule, naming
// the field. Before, a deny-list named three actions, and a new one passed.
func TestAtCreationRefusesEveryFieldThePolicyDoesNotApply(t *testing.T) {
	accepted := map[string]bool{"name": true, "kinds": true, "match": true, "setLabels": true, "setAnnotations": true, "copyFromNamespace": true,
		"requireLabels": true, "requireAnnotations": true, "atCreation": true, "force": true, "reservedKeys": true}
	typ := reflect.TypeFor[config.Rule]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if accepted[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			r := config.Rule{Name: "a", Kinds: []string{"Pod"}, AtCreation: true, SetLabels: map[string]string{"x": "v"}}
			setNonZero(reflect.ValueOf(&r).Elem().Field(i))
			c := &config.Config{Watches: []config.Watch{{Kind: "Pod"}}, Rules: []config.Rule{r}}
			want := "this rule also has " + name + ", which only the controller does"
			if errs := config.Validate(c); !strings.Contains(errs.ToAggregate().Error(), want) {
				t.Errorf("atCreation with %s set: got %v, want an error saying %q", name, errs, want)
			}
		})
	}
}

// setNonZero gives v a value other than its zero: one element, a pointer
// to a zero value, true.
func setNonZero(v reflect.Value) {
	switch v.Kind() {
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem())
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("x")
	default:
		panic("setNonZero: a rule field of kind " + v.Kind().String())
	}
}
