package wire

import (
	"net/http"

	"k8s.io/client-go/rest"
)

// StripManagedFields returns cfg with a transport that removes every
// managedFields entry but keepManager's from metadata-only protobuf responses
// before client-go decodes them (see newStripTransport).
func StripManagedFields(cfg *rest.Config, keepManager string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return newStripTransport(rt, keepManager) })
	return cfg
}
