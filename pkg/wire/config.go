package wire

import (
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// Options are how the caches fetch from the API server, as the process's
// flags say: what the transport does besides stripping managedFields, and
// which connections lists and watches use. They pass whole from the flags
// to every generation's Manager.
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
	// WatchOverHTTP2 lists and watches over the writes' HTTP/2 connection
	// instead of a connection each over HTTP/1.1. The transport does not read
	// it: the Manager builds the caches' HTTP client by it.
	WatchOverHTTP2 bool
	// Uncompressed asks the API server not to gzip the cache's lists and
	// watches (rest.Config.DisableCompression on their connections only):
	// gzip costs CPU on both sides for every event, against the bytes it
	// saves. The Manager builds the caches' HTTP client by it.
	Uncompressed bool
}

// DefaultBookmarkInterval is --unchanged-bookmark-interval's default: during
// a flood of status updates the reflector gets one bookmark a second instead
// of one per update, and never more than a second behind.
const DefaultBookmarkInterval = time.Second

// StripManagedFields returns cfg with a transport that removes every
// managedFields entry but those of keepManagers (metawatch's own, and the
// one it adopts keys from, if any) from metadata-only protobuf responses
// before client-go decodes them (see newStripTransport), and leaves out the
// watch events of unchanged objects unless o says not to. versions, if not
// nil, learns from every watch stream the newest resourceVersion of the
// objects whose events it left out.
func StripManagedFields(cfg *rest.Config, keepManagers []string, o Options, versions *ResourceVersions) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return newStripTransport(rt, keepManagers, o, versions) })
	return cfg
}
