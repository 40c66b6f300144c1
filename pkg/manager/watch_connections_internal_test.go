//go:build linux

package manager

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"
)

// A watch over HTTP/1.1 has no pings: TCP keepalive is what finds its
// connection dead, so the socket must carry deadConnection's settings, not
// client-go's dialer's (five minutes).
func TestACacheConnectionIsProbedForDeath(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conn, err := dialCacheConnection(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		level, option, value int
	}{
		"keepalive on":                  {syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
		"first probe after (s)":         {syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, int(deadConnection.Idle.Seconds())},
		"between probes (s)":            {syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, int(deadConnection.Interval.Seconds())},
		"unanswered probes before dead": {syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, deadConnection.Count},
	}
	for name, w := range want {
		var got int
		var getErr error
		if err := raw.Control(func(fd uintptr) { got, getErr = syscall.GetsockoptInt(int(fd), w.level, w.option) }); err != nil || getErr != nil {
			t.Fatalf("%s: %v %v", name, err, getErr)
		}
		if got != w.value {
			t.Errorf("%s: %d, want %d", name, got, w.value)
		}
	}
	if limit := deadConnection.Idle + deadConnection.Interval*time.Duration(deadConnection.Count); limit.Seconds() > 45 {
		t.Errorf("a dead connection is found after %v, later than HTTP/2's pings would (45 s)", limit)
	}
}
