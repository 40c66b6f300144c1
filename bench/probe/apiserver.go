package probe

import (
	"fmt"
	"net/url"
	"os"
)

// APIServer reads a kube-apiserver process on this machine: its CPU and
// resident set, for the fanout and bill scenarios.
type APIServer struct {
	pid, port string
	// peakSeen is the highest high-water mark read before a reset: the
	// process's peak since it started is the greater of it and the mark now.
	peakSeen int64
}

// APIServerAt is the kube-apiserver serving host (a rest.Config's Host),
// told apart from other API servers on this machine by the port it serves;
// nil, and why on stderr naming scenario, where no such process is here.
func APIServerAt(host, scenario string) *APIServer {
	u, err := url.Parse(host)
	if err != nil {
		return nil
	}
	pid := PIDServing("kube-apiserver", u.Port())
	if pid == "" {
		fmt.Fprintf(os.Stderr, "bench: %s: no kube-apiserver process serving port %s: the API server is not measured\n", scenario, u.Port())
		return nil
	}
	return &APIServer{pid: pid, port: u.Port()}
}

// PID is the process read.
func (m *APIServer) PID() string { return m.pid }

// Same reports whether the process read first still serves: not restarted
// in between, which would make a difference of readings meaningless.
func (m *APIServer) Same() bool { return PIDServing("kube-apiserver", m.port) == m.pid }

func (m *APIServer) cpuSeconds() float64 { return CPUSecondsOf(m.pid) }

// RSS is its resident set now.
func (m *APIServer) RSS() int64 { return RSSOf(m.pid) }

// PeakRSS is its high-water mark since the last ResetPeakRSS.
func (m *APIServer) PeakRSS() int64 { return PeakRSSOf(m.pid) }

// ResetPeakRSS sets the high-water mark back to the resident set now, so
// that PeakRSS then reads the peak since; the peak before is kept.
func (m *APIServer) ResetPeakRSS() error {
	m.peakSeen = max(m.peakSeen, m.PeakRSS())
	return ResetPeakRSS(m.pid)
}

// PeakSinceStart is the process's peak resident set since it started,
// whatever resets came between.
func (m *APIServer) PeakSinceStart() int64 { return max(m.peakSeen, m.PeakRSS()) }

// CPUSince starts counting the API server's CPU seconds; the function it
// returns gives those spent since, nil where m is nil or the API server
// restarted in between.
func (m *APIServer) CPUSince() func() *float64 {
	if m == nil {
		return func() *float64 { return nil }
	}
	before := m.cpuSeconds()
	return func() *float64 {
		if !m.Same() {
			return nil
		}
		spent := m.cpuSeconds() - before
		return &spent
	}
}
