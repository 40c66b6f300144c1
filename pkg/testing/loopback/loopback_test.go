package loopback

import (
	"net"
	"strconv"
	"testing"
)

// A port handed out lies below the ephemeral range, so that no outgoing
// connection can take it before the server binds it (the kernel's ":0" port
// lies inside that range, and a child metawatch once failed to bind one), is
// never handed out twice, and can be bound.
func TestFreePortIsBelowTheEphemeralRangeAndUnique(t *testing.T) {
	top, seen := ephemeralStart(), map[int]bool{}
	for range 100 {
		address, err := FreeAddress()
		if err != nil {
			t.Fatal(err)
		}
		_, portText, err := net.SplitHostPort(address)
		if err != nil {
			t.Fatal(err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			t.Fatal(err)
		}
		if port < lowestPort || port >= top {
			t.Fatalf("port %d outside [%d, %d), the range below the ephemeral ports", port, lowestPort, top)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", address)
		if err != nil {
			t.Fatalf("the handed-out address %s cannot be bound: %v", address, err)
		}
		_ = l.Close()
	}
}

// A port something already listens on is never handed out.
func TestFreePortSkipsAListeningPort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if listenable(port) {
		t.Fatalf("port %d reported free while a listener holds it", port)
	}
}
