// Package loopback finds free ports on 127.0.0.1 for servers that a test or
// the bench starts in another process.
//
// A port the kernel hands out for "127.0.0.1:0" comes from its ephemeral
// range, the range every outgoing connection takes its local port from.
// Between the check and the child's own bind, any of the connections a test
// binary holds to the API server may take that port, and the child fails with
// "address already in use". The ports here are chosen below that range, where
// only another listener can take them.
package loopback

import (
	"errors"
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

// defaultEphemeralStart is Linux's default start of the ephemeral range, for
// when the kernel's setting cannot be read.
const defaultEphemeralStart = 32768

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
// range, never the same twice in one process.
func FreePort() (int, error) {
	top := ephemeralStart()
	if top-lowestPort < 1000 {
		return 0, fmt.Errorf("the ephemeral port range starts at %d, leaving no room below it above %d", top, lowestPort)
	}
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		port := lowestPort + rand.IntN(top-lowestPort)
		if handed[port] || !listenable(port) {
			continue
		}
		handed[port] = true
		return port, nil
	}
	return 0, errors.New("no free port on 127.0.0.1 below the ephemeral range after 200 tries")
}

func listenable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralStart
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return defaultEphemeralStart
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil {
		return defaultEphemeralStart
	}
	return start
}
