package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// DialContext connects to addr from inside the cluster's network namespace,
// as a process on the node would: Service addresses (kube-proxy's rules) and
// pod addresses route there, and nowhere else. Use it as an http.Transport's
// DialContext to reach a Service the way an in-cluster client does.
//
// A socket belongs to the network namespace of the thread that created it,
// so the socket is made on a thread of its own that enters the namespace and
// is then thrown away (a goroutine that exits locked to its thread takes the
// thread with it), and the rest of the process never changes namespace.
func (c *Cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type dialed struct {
		conn net.Conn
		err  error
	}
	result := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread leaves the host's namespace
		conn, err := dialInNamespace(ctx, network, addr)
		result <- dialed{conn, err}
	}()
	r := <-result
	return r.conn, r.err
}

func dialInNamespace(ctx context.Context, network, addr string) (net.Conn, error) {
	ns, err := os.Open(netnsPath())
	if err != nil {
		return nil, fmt.Errorf("opening the cluster's network namespace (is the cluster running?): %w", err)
	}
	defer ns.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("entering network namespace %s: %w", netnsName, err)
	}
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

func netnsPath() string { return "/run/netns/" + netnsName }
