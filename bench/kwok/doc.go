// Package kwok runs kwok, a node simulator, for the bench harness.
//
// kwok (sigs.k8s.io/kwok, built from the module proxy and cached by version
// like the control plane, see controlplane.EnsureKwok) keeps Node objects
// Ready with leases as kubelets do. Pods seeded onto them are bound by name,
// as the scheduler would bind them, and kwok moves them to Running; during
// churn it also rewrites their Ready condition at a set rate, as a kubelet
// does on probe results. So on any target (--local-cluster, kind, a
// kubeconfig, the local control plane) tens of thousands of scheduled pods get
// kubelet-like status traffic from a component nobody on this project wrote.
//
// # Stages
//
// kwok does nothing without stages. stages.yaml holds kwok's own default
// ones, unchanged: nodes are initialised and heartbeat with leases, pods
// become Ready, deleted pods go. The churn adds one stage of ours (probeStage)
// for the first namespace's pods, and kwok is restarted to add or remove it:
// kwok reads stages only at start, and a restart costs a second or two while
// node leases last 40 s.
//
// # Isolation
//
// The nodes carry the taint kwok.x-k8s.io/node=fake:NoSchedule, so nothing
// but the bench's pods (which tolerate it and are bound by name) lands on
// them: on --local-cluster the chart's pods still go to the real node. kwok
// manages only nodes labelled metawatch.dev/bench-kwok=true and serves
// nothing (no --server-address): it only talks to the API server.
package kwok
