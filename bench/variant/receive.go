package variant

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// receiveOnly is the floor under what an event can cost a client that
// receives it as metawatch does: the pods' metadata-only watch in protobuf,
// over HTTP/1.1 and gzip as metawatch's cache gets it, each frame read and
// thrown away. Nothing is decoded, stored, compared or handed on, so what
// it spends per event is the receiving alone (TLS, gzip, the frame's read),
// which no client of the same stream can go below.
func receiveOnly() Variant {
	return Variant{Name: "receive-only", CacheOnly: true,
		Description: "not a cache: the pods' metadata-only protobuf watch over HTTP/1.1, each frame read and thrown away " +
			"(what receiving an event costs any client of the same stream)",
		Start: startReceiveOnly}
}

// receiveOnlyUncompressed is receiveOnly asking the API server not to gzip
// the stream, as metawatch-no-compression does: the floor without gzip.
func receiveOnlyUncompressed() Variant {
	return Variant{Name: "receive-only-no-compression", CacheOnly: true,
		Description: "receive-only with the client's compression off: the floor under an event's cost without gzip",
		Start: func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
			cfg = rest.CopyConfig(cfg)
			cfg.DisableCompression = true
			return startReceiveOnly(ctx, cfg, spec, counters)
		}}
}

// receiveTimeoutSeconds asks the API server to keep the one watch open for
// the whole run: the variant does not resume one that ends.
const receiveTimeoutSeconds = "21600"

// podMetadataProtobuf asks for each pod as PartialObjectMetadata in
// protobuf, as the metadata client and so metawatch's cache do.
const podMetadataProtobuf = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

func startReceiveOnly(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.NextProtos = []string{"http/1.1"}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	w := &frameCounter{counters: counters, synced: make(chan struct{}), failed: make(chan error, 1)}
	return &Running{
		Run: func() { go w.watch(ctx, client, podsWatchURL(server, spec.Selector)) },
		WaitSynced: func(ctx context.Context) error {
			select {
			case <-w.synced:
				return nil
			case err := <-w.failed:
				return err
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		},
		CachedPods:    func(context.Context) (int, error) { return int(w.added.Load()), nil },
		CachedPodUIDs: func(context.Context) ([]string, error) { return nil, errors.New("receive-only keeps no pods") },
		Relists:       w.relists.Load,
		ExpectRelist:  func() { w.reopen.Store(true) },
	}, nil
}

// podsWatchURL is a watch of every pod selector selects, from the initial
// events on, with bookmarks (the initial events end with one), under the
// server's path (a proxy's prefix kept).
func podsWatchURL(server *url.URL, selector string) string {
	q := url.Values{"watch": {"true"}, "labelSelector": {selector}, "sendInitialEvents": {"true"},
		"resourceVersionMatch": {"NotOlderThan"}, "allowWatchBookmarks": {"true"}, "timeoutSeconds": {receiveTimeoutSeconds}}
	u := *server
	u.Path, u.RawQuery = strings.TrimSuffix(server.Path, "/")+"/api/v1/pods", q.Encode()
	return u.String()
}

// frameCounter reads a protobuf watch stream frame by frame.
type frameCounter struct {
	counters *Counters
	added    atomic.Int64 // pods before the initial events' end
	synced   chan struct{}
	failed   chan error
	// reopen: once the watch ends, open it again from the start (a
	// relist: every pod's initial event again) instead of stopping.
	reopen atomic.Bool
	// relists are the initial events' ends after the first.
	relists atomic.Int64
}

// reopenEvery is how soon receive-only tries its watch again, once told to
// expect its end: the API server it is restarted on refuses it meanwhile.
const reopenEvery = time.Second

func (w *frameCounter) watch(ctx context.Context, client *http.Client, target string) {
	for {
		err := w.read(ctx, client, target)
		if ctx.Err() != nil {
			return
		}
		if !w.reopen.Load() {
			// The counts stop here: a firehose after this would be short of events.
			fmt.Fprintf(os.Stderr, "receive-only: the watch ended: %v\n", err)
			w.failed <- fmt.Errorf("receive-only: the watch ended: %w", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(reopenEvery):
		}
	}
}

func (w *frameCounter) read(ctx context.Context, client *http.Client, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", podMetadataProtobuf)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	var header [4]byte
	var frame []byte
	for {
		if _, err := io.ReadFull(resp.Body, header[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(header[:]))
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(resp.Body, frame); err != nil {
			return err
		}
		w.count(frame)
	}
}

var initialEventsEnd = []byte(metav1.InitialEventsAnnotationKey)

// count counts a frame as an event, or, the initial events' end, as synced.
func (w *frameCounter) count(frame []byte) {
	if eventType(frame) != string(watch.Bookmark) {
		w.counters.Events.Add(1)
		if !isClosed(w.synced) {
			w.added.Add(1)
		}
		return
	}
	if !bytes.Contains(frame, initialEventsEnd) {
		return
	}
	if isClosed(w.synced) {
		w.relists.Add(1)
		return
	}
	close(w.synced)
}

// eventType reads a watch frame's event type, and nothing else. The API
// server frames each event of a protobuf watch bare (its stream serializer
// is protobuf.NewRawSerializer): a metav1.WatchEvent, whose type is field 1,
// before its object. "" if the frame is not that.
func eventType(frame []byte) string {
	typ, _ := bytesField(frame, 1)
	return string(typ)
}

// bytesField is the first length-delimited field number of message.
func bytesField(message []byte, number protowire.Number) ([]byte, bool) {
	for len(message) > 0 {
		num, typ, n := protowire.ConsumeTag(message)
		if n < 0 {
			return nil, false
		}
		message = message[n:]
		if typ == protowire.BytesType && num == number {
			value, n := protowire.ConsumeBytes(message)
			return value, n >= 0
		}
		if n = protowire.ConsumeFieldValue(num, typ, message); n < 0 {
			return nil, false
		}
		message = message[n:]
	}
	return nil, false
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
