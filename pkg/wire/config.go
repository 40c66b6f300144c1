package wire

import (
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// Options are what the transport does besides stripping managedFields.
type Options struct {
	// DecodeUnchanged delivers every watch event as the API server sent it:
	// it turns off leaving out an unchanged object's event (a status-only
	// update), see unchangedEvents.
	DecodeUnchanged bool
	// BookmarkInterval is the most the bookmark standing for events left out
	// is held back while events flow (the informer's resourceVersion lags by
	// that much at most; it is exact whenever the stream ends, which is when
	// the reflector resumes). Zero sends one for every event left out.
	BookmarkInterval time.Duration
	// Versions, if not nil, learns from every watch stream the newest
	// resourceVersion of the objects whose events it left out.
	Versions *ResourceVersions
}

// StripManagedFields returns cfg with a transport that removes every
// managedFields entry but keepManager's from metadata-only protobuf responses
// before client-go decodes them (see newStripTransport), and leaves out the
// watch events of unchanged objects unless o says not to.
func StripManagedFields(cfg *rest.Config, keepManager string, o Options) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return newStripTransport(rt, keepManager, o) })
	return cfg
}
