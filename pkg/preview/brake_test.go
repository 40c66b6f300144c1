package preview

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The tally counts what the removal brake would hold, whether the keys
// objects lose are labels or annotations.
func TestTallySaysWhatTheRemovalBrakeWouldHold(t *testing.T) {
	type reporter func(kind string, i int, action string) Report
	cases := map[string]struct {
		limits brake.Bound
		add    func(*Tally, reporter)
		want   []BrakeLine
	}{
		"objects losing keys beyond the bound are held, counted once each": {
			limits: brake.Bound{Objects: 2, SharePercent: 10},
			add: func(t *Tally, report reporter) {
				for i := range 10 {
					t.Add(report("Pod", i, "release"))
				}
				t.Add(report("Pod", 10, "set"))
			},
			want: []BrakeLine{{Kind: "Pod", Objects: 11, Losing: 10, Bound: 2, Held: 8}},
		},
		"the share of the kind's objects raises the bound": {
			limits: brake.Bound{Objects: 1, SharePercent: 50},
			add: func(t *Tally, report reporter) {
				for i := range 4 {
					t.Add(report("Pod", i, "remove"))
				}
			},
			want: []BrakeLine{{Kind: "Pod", Objects: 4, Losing: 4, Bound: 2, Held: 2}},
		},
		"sets alone are never held": {
			limits: brake.Bound{Objects: 1},
			add: func(t *Tally, report reporter) {
				for i := range 4 {
					t.Add(report("Pod", i, "set"))
				}
			},
		},
		"the brake off holds nothing": {
			limits: brake.Bound{},
			add: func(t *Tally, report reporter) {
				for i := range 4 {
					t.Add(report("Node", i, "release"))
				}
			},
			want: []BrakeLine{{Kind: "Node", Objects: 4, Losing: 4, Bound: 0, Held: 0}},
		},
	}
	for typeName, kt := range testkit.KeyTypes {
		report := func(kind string, i int, action string) Report {
			r := Report{Object: Ref{Kind: kind, Namespace: "ns", Name: fmt.Sprint("o", i)}}
			if action != "" {
				r.Writes = []Write{{Map: kt.Field, Key: "k", Action: action}, {Map: kt.Field, Key: "j", Action: action}}
			}
			return r
		}
		t.Run(typeName, func(t *testing.T) {
			for name, c := range cases {
				t.Run(name, func(t *testing.T) {
					tally := &Tally{}
					c.add(tally, report)
					if got := tally.Brake(c.limits); !reflect.DeepEqual(got, c.want) {
						t.Errorf("Brake = %+v, want %+v", got, c.want)
					}
				})
			}
		})
	}
}
