package onenode

import "path/filepath"

// layout is where one cluster keeps its state: a data directory (etcd,
// containerd's images, the kubelet's pods) and a run directory (sockets).
// Both are removed by Stop. One cluster per machine at a time: the kubelet's
// cgroups and port 10250 would collide.
type layout struct {
	data, runDir string
}

func defaultLayout() layout {
	return layout{data: "/var/lib/metawatch-cluster", runDir: "/run/metawatch-cluster"}
}

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.data}, elem...)...)
}
func (l layout) run(elem ...string) string {
	return filepath.Join(append([]string{l.runDir}, elem...)...)
}
func (l layout) pki() pki                   { return pki{dir: l.path("pki")} }
func (l layout) containerdSocket() string   { return l.run("containerd.sock") }
func (l layout) kubeconfigPath() string     { return l.path("admin.kubeconfig") }
func (l layout) logPath(name string) string { return l.path("logs", name+".log") }
