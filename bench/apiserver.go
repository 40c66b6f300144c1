package main

import (
	"fmt"
	"net/url"
	"os"

	"github.com/metawatch/metawatch/bench/probe"
)

// apiServerMeter reads the local kube-apiserver's process: its CPU and
// resident set, for the fanout and bill scenarios.
type apiServerMeter struct {
	pid, port string
	// peakSeen is the highest high-water mark read before a reset: the
	// process's peak since it started is the greater of it and the mark now.
	peakSeen int64
}

// apiServerMeter is the local control plane's kube-apiserver, told apart
// from other API servers on this machine by the port it serves; nil, and
// why on stderr, where the API server is not the local control plane's.
func (h *harness) apiServerMeter(scenario string) *apiServerMeter {
	if h.controlPlane == nil {
		return nil
	}
	u, err := url.Parse(h.cfg.Host)
	if err != nil {
		return nil
	}
	pid := probe.PIDServing("kube-apiserver", u.Port())
	if pid == "" {
		fmt.Fprintf(os.Stderr, "bench: %s: no kube-apiserver process serving port %s: the API server is not measured\n", scenario, u.Port())
		return nil
	}
	return &apiServerMeter{pid: pid, port: u.Port()}
}

// same reports whether the process read first still serves: not restarted
// in between, which would make a difference of readings meaningless.
func (m *apiServerMeter) same() bool { return probe.PIDServing("kube-apiserver", m.port) == m.pid }

func (m *apiServerMeter) cpuSeconds() float64 { return probe.CPUSecondsOf(m.pid) }
func (m *apiServerMeter) rss() int64          { return probe.RSSOf(m.pid) }
func (m *apiServerMeter) peakRSS() int64      { return probe.PeakRSSOf(m.pid) }

// resetPeakRSS sets the high-water mark back to the resident set now, so
// that peakRSS then reads the peak since; the peak before is kept.
func (m *apiServerMeter) resetPeakRSS() error {
	m.peakSeen = max(m.peakSeen, m.peakRSS())
	return probe.ResetPeakRSS(m.pid)
}

// peakSinceStart is the process's peak resident set since it started,
// whatever resets came between.
func (m *apiServerMeter) peakSinceStart() int64 { return max(m.peakSeen, m.peakRSS()) }

// cpuSince starts counting the API server's CPU seconds; the function it
// returns gives those spent since, nil where m is nil or the API server
// restarted in between.
func (m *apiServerMeter) cpuSince() func() *float64 {
	if m == nil {
		return func() *float64 { return nil }
	}
	before := m.cpuSeconds()
	return func() *float64 {
		if !m.same() {
			return nil
		}
		spent := m.cpuSeconds() - before
		return &spent
	}
}
