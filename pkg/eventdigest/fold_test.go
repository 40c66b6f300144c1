package eventdigest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzFold folds occurrences in two orders, and split in two folds merged:
// the counts add up, the examples are at most MaxExamples, the smallest
// objects, and the same whatever the order.
func FuzzFold(f *testing.F) {
	f.Add([]byte("abcabcxyz"), uint64(1), uint8(3))
	f.Add([]byte(""), uint64(2), uint8(0))
	f.Add([]byte("zzzzzzzzzzzzzzzza"), uint64(3), uint8(9))
	f.Fuzz(func(t *testing.T, names []byte, seed uint64, split uint8) {
		var occ []Occurrence
		for i, b := range names {
			occ = append(occ, Occurrence{Object: fmt.Sprintf("obj-%c", 'a'+b%20), Detail: fmt.Sprintf("d%d", i%2)})
		}
		now := time.Unix(1000, 0)
		var a fold
		for _, o := range occ {
			a.add(o, now)
		}
		shuffled := slices.Clone(occ)
		rand.New(rand.NewPCG(seed, seed)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var b, first, second fold
		cut := 0
		if len(shuffled) > 0 {
			cut = int(split) % (len(shuffled) + 1)
		}
		for i, o := range shuffled {
			b.add(o, now)
			if i < cut {
				first.add(o, now)
			} else {
				second.add(o, now.Add(time.Second))
			}
		}
		first.merge(second)
		for name, got := range map[string]fold{"shuffled": b, "merged": first} {
			if got.count != len(occ) {
				t.Fatalf("%s: count %d, want %d", name, got.count, len(occ))
			}
			if !slices.Equal(got.examples, a.examples) {
				t.Fatalf("%s: examples %v, want %v", name, got.examples, a.examples)
			}
		}
		if len(a.examples) > MaxExamples {
			t.Fatalf("%d examples, want at most %d", len(a.examples), MaxExamples)
		}
		want := slices.Clone(occ)
		slices.SortFunc(want, compareOccurrences)
		want = slices.Compact(want)
		if want = want[:min(len(want), MaxExamples)]; !slices.Equal(a.examples, want) {
			t.Fatalf("examples %v, want the smallest %v", a.examples, want)
		}
		if len(occ) > 0 && !first.since.Equal(now) && cut > 0 {
			t.Fatalf("merged fold since %s, want the first occurrence's %s", first.since, now)
		}
	})
}

func TestNote(t *testing.T) {
	long := strings.Repeat("x", 400)
	for name, tc := range map[string]struct {
		key  Key
		fold fold
		want []string
	}{
		"a namespaced key names the count, the kind and its examples with their detail": {
			key:  Key{Kind: "Pod", Namespace: "shop", Message: "rule team: missing required metadata"},
			fold: fold{count: 3000, examples: []Occurrence{{Object: "web-1", Detail: "missing labels team"}, {Object: "web-2"}}},
			want: []string{"rule team: missing required metadata: 3000 Pod objects in this namespace", "e.g. web-1 (missing labels team), web-2"},
		},
		"a cluster-scoped key says so": {
			key:  Key{Kind: "Node", Message: "rule zone"},
			fold: fold{count: 1},
			want: []string{"1 Node objects cluster-scoped"},
		},
		"a note longer than the API server takes is cut": {
			key:  Key{Kind: "Pod", Namespace: "a", Message: long},
			fold: fold{count: 1, examples: []Occurrence{{Object: long, Detail: long}}},
			want: []string{"..."},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := note(tc.key, tc.fold)
			if len(got) > maxNote {
				t.Errorf("note of %d bytes, want at most %d", len(got), maxNote)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("note %q, want it to contain %q", got, w)
				}
			}
		})
	}
}

func TestBudget(t *testing.T) {
	at := time.Unix(0, 0)
	for name, tc := range map[string]struct {
		perMinute int
		takes     []time.Duration // offsets of each take
		want      []bool
	}{
		"a burst takes the whole minute's writes and no more": {perMinute: 3, takes: []time.Duration{0, 0, 0, 0}, want: []bool{true, true, true, false}},
		"writes come back as the minute passes":               {perMinute: 2, takes: []time.Duration{0, 0, 0, 30 * time.Second, 31 * time.Second}, want: []bool{true, true, false, true, false}},
		"an idle hour saves no more than a minute's":          {perMinute: 1, takes: []time.Duration{time.Hour, time.Hour, time.Hour}, want: []bool{true, false, false}},
		"a zero budget writes nothing":                        {perMinute: 0, takes: []time.Duration{0, time.Minute}, want: []bool{false, false}},
	} {
		t.Run(name, func(t *testing.T) {
			b := newBudget(tc.perMinute, at)
			for i, off := range tc.takes {
				if got := b.take(at.Add(off)); got != tc.want[i] {
					t.Errorf("take %d at +%s = %v, want %v", i, off, got, tc.want[i])
				}
			}
		})
	}
}
