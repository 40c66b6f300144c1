package admission

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Why pairs of this installation that should be gone are still in the
// cluster (metawatch_admission_cleanup_blocked's reason).
const (
	// BlockedForbidden: RBAC forbids listing or deleting them.
	BlockedForbidden = "forbidden"
	// BlockedDryRun: --dry-run deletes nothing (or a process that exits
	// before it may write), and they still write.
	BlockedDryRun = "dry-run"
)

// DeleteCommand is the kubectl line that deletes every pair of the
// installation configured by source: what an operator runs where metawatch
// may not.
func DeleteCommand(source string) string {
	return fmt.Sprintf("kubectl delete mutatingadmissionpolicies,mutatingadmissionpolicybindings -l %s=%s,%s=%s",
		ManagedByLabel, ManagedBy, InstallationLabel, InstallationValue(source))
}

// Leftovers collects why pairs of this installation that should be gone
// remain, from each part that deletes them (the Pruner, for the limits; a
// generation's Syncer, for removed rules): readiness, a metric and, through
// OnChange, an Event say so, with the kubectl line that deletes them. A
// policy left behind goes on writing keys on every create, by rules nobody
// runs: that must not pass quietly.
type Leftovers struct {
	// OnChange, when set, is told each new problem (not when one clears).
	OnChange func(problem string)

	mu       sync.Mutex
	problems map[string]blocked // by the part that reports it
}

type blocked struct{ reason, problem string }

// Set records why the pairs part would delete remain ("" problem: none
// remains); reason is BlockedForbidden or BlockedDryRun.
func (l *Leftovers) Set(part, reason, problem string) {
	l.mu.Lock()
	if l.problems == nil {
		l.problems = map[string]blocked{}
	}
	previous := l.problems[part]
	current := blocked{reason: reason, problem: problem}
	if problem == "" {
		current = blocked{}
	}
	l.problems[part] = current
	counts := map[string]float64{BlockedForbidden: 0, BlockedDryRun: 0}
	for _, b := range l.problems {
		if b.problem != "" {
			counts[b.reason] = 1
		}
	}
	for reason, n := range counts { // under the lock: two parts setting at once agree
		telemetry.AdmissionCleanupBlocked.WithLabelValues(reason).Set(n)
	}
	l.mu.Unlock()
	if current != previous && problem != "" && l.OnChange != nil {
		l.OnChange(problem)
	}
}

// Ready fails while RBAC keeps pairs that should be gone (a dry run's do
// not fail it: a replica that is not ready holds a rolling update back, and
// the replica it would replace writes, where a dry run writes nothing).
func (l *Leftovers) Ready() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, b := range l.problems {
		if b.reason == BlockedForbidden && b.problem != "" {
			out = append(out, b.problem)
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.Strings(out)
	errs := make([]error, 0, len(out))
	for _, p := range out {
		errs = append(errs, errors.New(p))
	}
	return errors.Join(errs...)
}
