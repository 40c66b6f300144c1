package metamanager

import (
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/wire"
)

// cacheHTTPClient is the HTTP client of the cache's lists and watches: a
// connection of their own each, over HTTP/1.1, unless o.WatchOverHTTP2 (the writes,
// discovery and the Lease keep HTTP/2 either way).
//
// Why (#14): on HTTP/2, every watch event costs the client more than the
// event itself. Each 4 KB or so read from a stream makes Go's HTTP/2 client
// write a WINDOW_UPDATE back (encrypted, flushed: a syscall), and the
// connection's read loop hands the bytes to the informer's goroutine through
// a pipe (a futex wake-up each time). Under a firehose of status-only events,
// which metawatch leaves out before decoding, that was 36 to 56% of what an
// event still cost (bench/results/2026-11-22-watch-http1). Over HTTP/1.1 the informer
// reads its stream straight off the connection and acknowledges nothing. A
// watch is one long request, so it loses nothing by not being multiplexed;
// the price is a TCP connection per watched kind (a few, against an API
// server that serves thousands).
//
// HTTP/2 also finds a dead connection by pinging it (client-go: after 30 s
// without a frame, 15 s for the answer). A watch over HTTP/1.1 has only TCP
// keepalive for that, which client-go's own dialer would let run for five
// minutes; deadConnection finds it in about as long as the pings do.
//
// With o.Uncompressed, the cache's connections ask for no gzip (a transport
// given by the caller decides that too).
func cacheHTTPClient(cfg *rest.Config, o wire.Options) (*http.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = cfg.DisableCompression || o.Uncompressed
	if o.WatchOverHTTP2 || cfg.Transport != nil {
		// A transport given by the caller decides its own protocols.
		return rest.HTTPClientFor(cfg)
	}
	cfg.NextProtos = []string{"http/1.1"}
	if cfg.Dial == nil {
		// A Dial of its own gives each generation's cache a transport of its
		// own in client-go's TLS cache, which lets go of it with the
		// generation (ClientsAllowTLSCacheGC, on by default since 1.36).
		cfg.Dial = dialCacheConnection
	}
	return rest.HTTPClientFor(cfg)
}

// deadConnection is the TCP keepalive of a cache connection: probed after 15 s
// without a byte from the API server (a watch gets a bookmark a minute or an
// event far more often), declared dead after 3 unanswered probes 5 s apart.
// The watch then fails and the reflector resumes it on a new connection.
var deadConnection = net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3}

// dialCacheConnection dials a cache connection, with deadConnection's keepalive.
var dialCacheConnection = (&net.Dialer{Timeout: 30 * time.Second, KeepAliveConfig: deadConnection}).DialContext
