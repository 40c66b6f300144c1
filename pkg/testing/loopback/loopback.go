// Package loopback finds free ports on 127.0.0.1 for servers that a test or
// the bench starts in another process.
//
// A port the kernel hands out for "127.0.0.1:0" comes from its ephemeral
// range, the range every outgoing connection takes its local port from.
// Between the check and the child's own bind, any of the connections a test
// binary holds to the API server may take that port, and the child fails with
// "address already in use". The ports here are chosen below that range (above
// it where it starts low), where only another listener can take them.
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowestPort is the bottom of the range ports are drawn from, above the
// ports well-known services listen on.
const lowestPort = 10000

// defaultEphemeralStart and defaultEphemeralEnd are Linux's default
// ephemeral range, for when the kernel's setting cannot be read.
const (
	defaultEphemeralStart = 32768
	defaultEphemeralEnd   = 60999
)

// minimumPorts is the fewest ports a range outside the ephemeral one must
// hold to be drawn from.
const minimumPorts = 1000

var (
	mu     sync.Mutex
	handed = map[int]bool{} // ports this process has handed out already
)

// FreeAddress is "127.0.0.1:PORT" for a port nothing listens on, outside the
// ephemeral range.
func FreeAddress() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// FreePort is a port nothing listens on at 127.0.0.1, outside the ephemeral
// range where the kernel leaves room for it, never the same twice in one
// process.
func FreePort() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	low, high, ok := outside(ephemeralRange())
	if !ok {
		return kernelPort() // a range tuned to cover nearly every port
	}
	for range 200 {
		port := low + rand.IntN(high-low)
		if handed[port] || !listenable(port) {
			continue
		}
		handed[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 in [%d, %d) after 200 tries", low, high)
}

// outside is the range [low, high) ports are drawn from, given the ephemeral
// range [start, end]: below it, or above it where it starts low, if either
// holds at least minimumPorts ports.
func outside(start, end int) (low, high int, ok bool) {
	switch {
	case start-lowestPort >= minimumPorts:
		return lowestPort, start, true
	case 65535-end >= minimumPorts:
		return end + 1, 65536, true
	}
	return 0, 0, false
}

// kernelPort is a port the kernel hands out for 127.0.0.1:0.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func listenable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// ephemeralRange is the kernel's ephemeral port range, first and last.
func ephemeralRange() (start, end int) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralStart, defaultEphemeralEnd
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return defaultEphemeralStart, defaultEphemeralEnd
	}
	start, errStart := strconv.Atoi(fields[0])
	end, errEnd := strconv.Atoi(fields[1])
	if errStart != nil || errEnd != nil {
		return defaultEphemeralStart, defaultEphemeralEnd
	}
	return start, end
}
