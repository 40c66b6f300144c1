package engine

import (
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/wire"
)

// StripManagedFields returns cfg with a transport that removes other
// managers' managedFields from metadata-only protobuf responses before
// client-go decodes them (see package wire).
func StripManagedFields(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return wire.StripTransport(rt, FieldManager) })
	return cfg
}
