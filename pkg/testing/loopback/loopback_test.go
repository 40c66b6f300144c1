package loopback

import (
	"net"
	"strconv"
	"testing"
)

// A port handed out lies outside the ephemeral range, so that no outgoing
// connection can take it before the server binds it (the kernel's ":0" port
// lies inside that range, and a child metawatch once failed to bind one), is
// never handed out twice, and can be bound.
func TestFreePortIsBelowTheEphemeralRangeAndUnique(t *testing.T) {
	low, high, ok := outside(ephemeralRange())
	if !ok {
		t.Skip("the ephemeral range covers nearly every port here: ports come from the kernel")
	}
	seen := map[int]bool{}
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
		if port < low || port >= high {
			t.Fatalf("port %d outside [%d, %d), the ports outside the ephemeral range", port, low, high)
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

// Ports are drawn below the ephemeral range, above it where it starts too
// low to leave room below, and from the kernel where it leaves room nowhere.
func TestPortsAreDrawnOutsideTheEphemeralRange(t *testing.T) {
	for name, tc := range map[string]struct {
		start, end, low, high int
		ok                    bool
	}{
		"Linux's default range leaves room below it": {start: 32768, end: 60999, low: 10000, high: 32768, ok: true},
		"a range starting low leaves room above it":  {start: 10500, end: 60999, low: 61000, high: 65536, ok: true},
		"a range covering nearly every port":         {start: 1024, end: 65000, ok: false},
	} {
		t.Run(name, func(t *testing.T) {
			low, high, ok := outside(tc.start, tc.end)
			if low != tc.low || high != tc.high || ok != tc.ok {
				t.Errorf("outside(%d, %d) = [%d, %d) %v, want [%d, %d) %v", tc.start, tc.end, low, high, ok, tc.low, tc.high, tc.ok)
			}
		})
	}
}
