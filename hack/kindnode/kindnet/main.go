// Command kindnet is the pod network of a kind node image built by
// hack/kindnode, in place of kind's kindnetd (whose module the Go module
// proxy does not serve, so it cannot be built here). It runs from kind's own
// CNI manifest and does the part of kindnetd a cluster without a way out
// needs: it writes the node's CNI configuration, kindnetd's, for the pod
// CIDRs the node was given, and routes other nodes' pod CIDRs to them. It
// does not masquerade traffic leaving the cluster: there is nowhere to go.
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// confPath is where the kubelet's CNI finds the configuration (kind's
// manifest mounts the node's /etc/cni/net.d there).
const confPath = "/etc/cni/net.d/10-kindnet.conflist"

// conf is kindnetd's configuration: ptp with host-local addresses of the
// node's pod CIDRs, and portmap.
var conf = template.Must(template.New("conf").Parse(`{
	"cniVersion": "0.3.1",
	"name": "kindnet",
	"plugins": [
	{
		"type": "ptp",
		"ipMasq": false,
		"ipam": {
			"type": "host-local",
			"dataDir": "/run/cni-ipam-state",
			"routes": [{{range $i, $r := .Routes}}{{if $i}}, {{end}}{ "dst": "{{$r}}" }{{end}}],
			"ranges": [{{range $i, $c := .PodCIDRs}}{{if $i}}, {{end}}[ { "subnet": "{{$c}}" } ]{{end}}]
		}
	},
	{
		"type": "portmap",
		"capabilities": { "portMappings": true }
	}
	]
}
`))

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kindnet: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	hostIP := os.Getenv("HOST_IP")
	if hostIP == "" {
		return fmt.Errorf("HOST_IP is not set: kind's CNI manifest sets it from status.hostIP")
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	// kind's manifest names the API server directly, so the network does not
	// wait for kube-proxy's Service rules.
	if endpoint := os.Getenv("CONTROL_PLANE_ENDPOINT"); endpoint != "" {
		cfg.Host = "https://" + endpoint
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for {
		if err := reconcile(ctx, cs, hostIP); err != nil {
			fmt.Fprintf(os.Stderr, "kindnet: %v (trying again in 10s)\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(10 * time.Second):
		}
	}
}

// reconcile writes this node's configuration and routes the others' pod CIDRs.
func reconcile(ctx context.Context, cs kubernetes.Interface, hostIP string) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, node := range nodes.Items {
		ips := internalIPs(node)
		if slices.Contains(ips, hostIP) {
			if err := writeConf(node.Spec.PodCIDRs); err != nil {
				return err
			}
			continue
		}
		if len(ips) == 0 {
			continue
		}
		for _, cidr := range node.Spec.PodCIDRs {
			if out, err := exec.CommandContext(ctx, "ip", "route", "replace", cidr, "via", ips[0]).CombinedOutput(); err != nil {
				return fmt.Errorf("route to %s via node %s: %w: %s", cidr, node.Name, err, out)
			}
		}
	}
	return nil
}

func internalIPs(node corev1.Node) []string {
	var ips []string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			ips = append(ips, a.Address)
		}
	}
	return ips
}

// writeConf writes the configuration for podCIDRs unless it is there already
// (the kubelet reads it on change), through a temporary file.
func writeConf(podCIDRs []string) error {
	if len(podCIDRs) == 0 {
		return nil // not given yet by kube-controller-manager
	}
	var b bytes.Buffer
	if err := conf.Execute(&b, map[string][]string{"PodCIDRs": podCIDRs, "Routes": routes(podCIDRs)}); err != nil {
		return err
	}
	if old, err := os.ReadFile(confPath); err == nil && bytes.Equal(old, b.Bytes()) {
		return nil
	}
	tmp := filepath.Join(filepath.Dir(confPath), ".10-kindnet.conflist.tmp")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, confPath)
}

// routes are the default route of each pod CIDR's family.
func routes(podCIDRs []string) []string {
	var out []string
	for _, c := range podCIDRs {
		if strings.Contains(c, ":") {
			out = append(out, "::/0")
		} else {
			out = append(out, "0.0.0.0/0")
		}
	}
	return out
}
