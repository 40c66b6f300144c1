package reload

import (
	"cmp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/authority"
)

// ReasonAdmissionCleanupBlocked is the Event reason for admission policies of this installation
// that its flags, RBAC or configuration no longer allow remain, because
// RBAC forbids deleting them or --dry-run deletes nothing.
const ReasonAdmissionCleanupBlocked = "AdmissionCleanupBlocked"

func (r *Reloader) installation() string {
	return cmp.Or(r.Settings.Installation, r.Source.Installation())
}

// addPruner adds the Pruner of the pairs the flags no longer allow. It runs
// whatever becomes of the configuration (a rejected one runs no
// generation), under the claim the generations' writes pass: the Lease's,
// or sharded, the Ring's (the holder of the pair's bucket deletes it). Its
// own write fence is closed with the last generation's (stopCurrent).
func (r *Reloader) addPruner(mgr manager.Manager, fenced client.Client) error {
	r.leftovers = &admission.Leftovers{OnChange: r.reportLeftovers}
	dc, err := discovery.NewDiscoveryClientForConfig(r.Config)
	if err != nil {
		return err
	}
	guard, err := r.guard(authority.NewWriteFence())
	if err != nil {
		return err
	}
	r.pruner = &admission.Pruner{Guardrails: &r.Settings.Guardrails, Installation: r.installation(), Keep: map[bool]string{true: "--dry-run deletes nothing"}[r.Settings.DryRun],
		Client: fenced, Mapper: fenced.RESTMapper(), Discovery: dc, Guard: guard, NeedLeader: r.Settings.Mode != authority.Sharded,
		Log: r.Log.WithName("admission-pruner"), Leftovers: r.leftovers}
	return mgr.Add(r.pruner)
}

// reportLeftovers says, once per reason, that pairs to delete remain: a
// log line, and a Warning Event on the selectors ConfigMap.
func (r *Reloader) reportLeftovers(problem string) {
	r.Log.Info("warning: " + problem)
	if r.follower == nil {
		return
	}
	if cm := r.follower.current().cm; cm != nil {
		r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, ReasonAdmissionCleanupBlocked, "AdmissionPolicy", "%s", eventNote(problem))
	}
}
