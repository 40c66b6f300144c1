package controlplane

import (
	"flag"
	"os"
)

// ExternalKubeconfig is the cluster a command was pointed at: --kubeconfig
// (the flag controller-runtime registers) or $KUBECONFIG; "" means none, so
// the command starts a local control plane instead. Call it after flag.Parse.
func ExternalKubeconfig() string {
	if f := flag.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	return os.Getenv("KUBECONFIG")
}
