// Package kindnode builds a kind node image on this machine without a
// registry, and runs the container engine kind needs: what `make kind`, its
// test and the bench's --kind stand on.
//
// # Why not kind build node-image
//
// kind's own builder starts from kindest/base and pulls every image a node
// needs (kubeadm's, the sandbox, kindnetd, the local-path provisioner) into
// the node's containerd. With no registry to pull from, the node is assembled
// here instead, the same way:
//
//   - a root file system from Debian's packages (debootstrap): systemd,
//     containerd, runc, the CNI plugins, iptables, as kind's base image
//     installs them, plus kind's own files for a base image (its entrypoint,
//     units and containerd configuration) from the kind module;
//   - kubeadm, kubelet and kubectl of the project's Kubernetes version, and
//     crictl, built from the module proxy like the control plane;
//   - every image kubeadm names, built from the module proxy (the Kubernetes
//     components, etcd and CoreDNS at the versions kubeadm names) on a layer
//     of the same Debian files, and the images of kind's manifests, imported
//     into the node's containerd, so nothing is pulled;
//   - kind's default CNI and storage manifests, read from kind's source, with
//     the images built here in place of kind's own: the proxy serves neither
//     kind's kindnetd module nor the local-path provisioner version kind
//     builds, so the pod network is this repository's kindnet (package
//     kindnet: the CNI configuration and routes kindnetd writes) and the
//     provisioner the version the proxy has; they carry names of their own;
//   - the sandbox image is the one-node cluster's pause program.
//
// The image is built once per recipe and cached twice: in the container
// engine's image store, and as a tarball in the project's cache directory
// (imported again if the engine's store was wiped). One process builds at a
// time (a lock in the cache directory); a build stopped half way unmounts
// and removes what it made, and what a killed one left is removed by the
// next build.
//
// # The container engine
//
// Debian's docker.io, installed when missing, with no service of the
// package's started by the install (a policy-rc.d refusing it, for the
// install only), and apt-get left to finish on Ctrl-C. A dockerd started here runs
// without iptables rules, without switching the host's forwarding on and
// without its default bridge (--iptables=false, --ip-forward=false,
// --bridge=none): kind's containers sit on a network of their own, bridged,
// published ports go through docker's userland proxy, and the host's
// network namespace (its firewall and forwarding), which the one-node
// cluster of make cluster reaches its API server through, is left as it was.
// An engine that was already running is used as it is, with its own
// settings, and left running.
package kindnode
