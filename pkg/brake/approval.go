package brake

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Approval's value, parsed: the held change it names and, optionally, how
// many objects per kind it lets go on.
type approvalValue struct {
	token   string
	hash    string // the first 12 hex digits of the configuration hash
	change  int
	objects int // 0: the objects held when it is used
}

// parseApproval reads an AllowRemovals value: "<token>" or
// "<token>,objects=<N>", the token as Token makes it.
func parseApproval(value string) (approvalValue, error) {
	token, rest, withCount := strings.Cut(strings.TrimSpace(value), ",")
	hash, number, ok := strings.Cut(token, "-")
	change, err := strconv.Atoi(number)
	if !ok || err != nil || change < 1 || hash == "" {
		return approvalValue{}, fmt.Errorf("%s=%q is not a held change: expected the token the RemovalsHeld Event names, such as 3f2a9c1b7d04-2 (an earlier metawatch approved by the configuration's whole hash: approvals now name one held change)", AllowRemovals, value)
	}
	v := approvalValue{token: token, hash: hash, change: change}
	if withCount {
		n, found := strings.CutPrefix(strings.TrimSpace(rest), "objects=")
		if v.objects, err = strconv.Atoi(n); !found || err != nil || v.objects < 1 {
			return approvalValue{}, fmt.Errorf("%s=%q: after the token, expected objects=N with N a positive number of the held objects per kind to let go on, such as %s,objects=5000", AllowRemovals, value, token)
		}
	}
	return v, nil
}

// Verdict is what an approval did, for the Reloader to say.
type Verdict struct {
	// Token is the change the approval names.
	Token string
	// Released are, per kind, the held objects it let go on here.
	Released map[string]int
	// Problem says why it cannot apply, in the operator's words; "" when it
	// applied, or when it waits (nothing held here yet under its change).
	Problem string
}

// Approve uses the AllowRemovals value for the objects this generation holds
// under the change it names: they go on (queued to the functions OnApproved
// registered), the record notes the approval as used and the change as
// closed, and whatever needs removing later is held again, under a new
// change. Objects held here under no change it names are left held. An
// approval of a change that was already used lets go the objects still
// held here under it (another replica used it first, or this one before a
// restart), never more.
func (b *Brake) Approve(ctx context.Context, value string) Verdict {
	if b == nil || value == "" {
		return Verdict{}
	}
	v, err := parseApproval(value)
	if err != nil {
		return Verdict{Problem: err.Error()}
	}
	verdict := Verdict{Token: v.token}
	if v.hash != shortHash(b.hash) {
		verdict.Problem = b.otherConfiguration(v)
		return verdict
	}
	keys := b.heldUnder(v.change, v.objects)
	if len(keys) == 0 {
		verdict.Problem = b.nothingHeldUnder(ctx, v)
		return verdict
	}
	counts := map[string]int{}
	for kind, ks := range keys {
		counts[kind] = len(ks)
	}
	b.counting.Lock()
	var granted map[string]int
	err = b.ledger.update(ctx, func(r *Record) bool {
		granted = nil
		if !r.claim(b.hash, b.order) {
			return false
		}
		granted = r.approve(v.token, v.change, counts, v.objects, b.ledger.window(b.bound.Window))
		return granted != nil
	})
	b.counting.Unlock()
	switch {
	case err != nil:
		verdict.Problem = fmt.Sprintf("approval %s not used yet: %v; it is tried again at the next change of the ConfigMap", v.token, err)
		return verdict
	case granted == nil:
		verdict.Problem = fmt.Sprintf("approval %s names change %d, which is no longer held (approved, or its configuration replaced)%s", v.token, v.change, b.heldNowHint())
		return verdict
	}
	released := map[string][]types.NamespacedName{}
	for kind, n := range granted {
		released[kind] = keys[kind][:n] // fewer: other replicas used some of the operator's count
	}
	verdict.Released = granted
	b.release(released)
	for _, kind := range b.stillHeldUnder(v.change) {
		b.push(ctx, kind) // beyond the operator's count: held again, under a new change
	}
	return verdict
}

// stillHeldUnder are the kinds with objects held under change.
func (b *Brake) stillHeldUnder(change int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for kind, k := range b.kinds {
		for _, h := range k.held {
			if h.change == change {
				out = append(out, kind)
				break
			}
		}
	}
	return out
}

// heldUnder are, per kind, the objects held under change: at most objects
// per kind if objects > 0.
func (b *Brake) heldUnder(change, objects int) map[string][]types.NamespacedName {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]types.NamespacedName{}
	for kind, k := range b.kinds {
		for key, h := range k.held {
			if h.change == change && (objects == 0 || len(out[kind]) < objects) {
				out[kind] = append(out[kind], key)
			}
		}
	}
	return out
}

// release lets keys go on: no longer held, queued to be written.
func (b *Brake) release(keys map[string][]types.NamespacedName) {
	b.mu.Lock()
	callbacks := map[string]func([]types.NamespacedName){}
	for kind, ks := range keys {
		k := b.kind(kind)
		for _, key := range ks {
			// Let through with the keys it was held for: counted in the
			// record by the approval, its write is not counted again.
			k.touched[key] = k.held[key].keys
			delete(k.held, key)
		}
		b.publishKind(kind, k)
		callbacks[kind] = b.onApproved[kind]
	}
	b.mu.Unlock()
	for kind, ks := range keys {
		if f := callbacks[kind]; f != nil {
			f(ks)
		}
	}
}

// nothingHeldUnder says why an approval of change v found nothing held
// here, or "" when that is as it should be (it was used, or its change is
// still open and this replica holds nothing of it yet).
func (b *Brake) nothingHeldUnder(ctx context.Context, v approvalValue) string {
	rec, err := b.ledger.read(ctx)
	if err != nil {
		return fmt.Sprintf("approval %s cannot be checked: %v", v.token, err)
	}
	held := b.HeldChange()
	switch {
	case rec.Configuration == b.hash && rec.Open && rec.Change == v.change:
		return "" // open: what comes to be held under it is let go then
	case held == "" || held == v.token:
		return "" // used, and nothing is held now
	}
	if a, ok := rec.used(v.token); ok {
		return fmt.Sprintf("approval %s was used at %s (for %d objects); the change held now is %s, which needs its own approval%s",
			v.token, a.At.UTC().Format("2006-01-02T15:04:05Z"), a.Objects, held, b.heldNowHint())
	}
	return fmt.Sprintf("approval %s names no change held by this configuration%s", v.token, b.heldNowHint())
}

// otherConfiguration says that v names another configuration's change.
func (b *Brake) otherConfiguration(v approvalValue) string {
	return fmt.Sprintf("approval %s names a change of configuration %s..., but configuration %s... runs%s", v.token, v.hash, shortHash(b.hash), b.heldNowHint())
}

// heldNowHint names the change held now, if any, for a message.
func (b *Brake) heldNowHint() string {
	if held := b.HeldChange(); held != "" {
		return "; the change held now is " + held
	}
	return ""
}
