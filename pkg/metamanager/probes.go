package metamanager

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Probes are the liveness and readiness checks ServeProbes serves.
type Probes struct {
	Live, Ready map[string]healthz.Checker
	// Describe, for a readiness check's name, says how the replica runs; a
	// passing /readyz/<name> answers "ok: " and that (e.g. the sharding mode)
	// instead of a bare "ok".
	Describe map[string]func() string
}

// ServeProbes serves /healthz and /readyz on addr ("0" or "": not at all)
// as controller-runtime's own probe server does (the aggregate, ?verbose,
// ?exclude=, /readyz/<check>), plus the descriptions of Probes.Describe. New
// leaves the probe address to it: controller-runtime's server answers a
// passing check with "ok" and nothing else. The port is bound here, so a
// taken one fails at setup.
func ServeProbes(mgr manager.Manager, addr string, p Probes) error {
	if addr == "" || addr == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for health probes on %s (--health-probe-bind-address): %w", addr, err)
	}
	mux := http.NewServeMux()
	handle(mux, "/healthz", &healthz.Handler{Checks: p.Live})
	handle(mux, "/readyz", &healthz.Handler{Checks: p.Ready})
	for name, describe := range p.Describe {
		mux.Handle("/readyz/"+name, describedCheck{check: p.Ready[name], describe: describe})
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 32 * time.Second, IdleTimeout: 90 * time.Second}
	return mgr.Add(&manager.Server{Name: "health probe", Server: srv, Listener: ln})
}

func handle(mux *http.ServeMux, path string, h http.Handler) {
	mux.Handle(path, http.StripPrefix(path, h))
	mux.Handle(path+"/", http.StripPrefix(path, h))
}

// describedCheck answers as healthz.CheckHandler does, with the description added.
type describedCheck struct {
	check    healthz.Checker
	describe func() string
}

func (d describedCheck) ServeHTTP(resp http.ResponseWriter, req *http.Request) {
	if err := d.check(req); err != nil {
		http.Error(resp, fmt.Sprintf("internal server error: %v (%s)", err, d.describe()), http.StatusInternalServerError)
		return
	}
	resp.Header().Set("Content-Type", "text/plain; charset=utf-8")
	resp.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = fmt.Fprintf(resp, "ok: %s", d.describe())
}
