package onenode

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
// so the socket is made on a thread locked to a goroutine of its own, which
// enters the namespace and goes back to its own before it is unlocked. If it
// cannot go back, it stays locked and is thrown away with the goroutine. The
// rest of the process never changes namespace (which Stop relies on: it kills
// whatever is left in the cluster's namespace).
func (c *Cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return DialInNamespace(ctx, netnsPath(), network, addr)
}

// DialInNamespace connects to addr from inside the network namespace at
// nsPath (a /run/netns entry, or /proc/PID/ns/net of a process in it), the
// way DialContext does for the cluster's: a kind node's namespace, say.
func DialInNamespace(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	type dialed struct {
		conn net.Conn
		err  error
	}
	result := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread()
		conn, back, err := dialIn(ctx, nsPath, network, addr)
		if back {
			runtime.UnlockOSThread()
		}
		result <- dialed{conn, err}
	}()
	r := <-result
	return r.conn, r.err
}

// dialIn dials from the namespace at nsPath on the calling (locked) thread;
// back reports whether the thread is in its own namespace again.
func dialIn(ctx context.Context, nsPath, network, addr string) (_ net.Conn, back bool, _ error) {
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return nil, true, err
	}
	defer own.Close()
	ns, err := os.Open(nsPath)
	if err != nil {
		return nil, true, fmt.Errorf("opening the cluster's network namespace (is the cluster running?): %w", err)
	}
	defer ns.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("entering network namespace %s: %w", nsPath, err)
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	back = unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil
	return conn, back, err
}

func netnsPath() string { return "/run/netns/" + netnsName }
