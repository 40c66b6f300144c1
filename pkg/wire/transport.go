package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// newStripTransport wraps next so that metadata-only protobuf responses lose
// every managedFields entry but those of keepManagers before client-go decodes them
// (see stripManagedFields). Only responses to requests that ask for
// application/vnd.kubernetes.protobuf;as=PartialObjectMetadata are touched;
// anything it cannot parse passes through unchanged.
func newStripTransport(next http.RoundTripper, keepManagers []string, o Options, versions *ResourceVersions) http.RoundTripper {
	keep := make([][]byte, len(keepManagers))
	for i, m := range keepManagers {
		keep[i] = []byte(m)
	}
	return stripTransport{next: next, keep: keep, replaceUnchanged: !o.DecodeUnchanged, bookmarkInterval: o.BookmarkInterval, versions: versions}
}

type stripTransport struct {
	next http.RoundTripper
	keep [][]byte // the managers whose entries are kept
	// replaceUnchanged makes watch streams leave out unchanged objects'
	// events, with bookmarks at most bookmarkInterval apart (unchangedEvents).
	replaceUnchanged bool
	bookmarkInterval time.Duration
	versions         *ResourceVersions
}

const metadataProtobuf = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata"

func (t stripTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(req.Header.Get("Accept"), metadataProtobuf) ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.kubernetes.protobuf") {
		return resp, err
	}
	e := edit{managers: t.keep, uids: keepUIDsOf(req.Context())}
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		f := &frameStripper{body: resp.Body, edit: e}
		if t.replaceUnchanged {
			f.unchanged = newUnchangedEvents(t.bookmarkInterval, telemetry.UnchangedEvents.WithLabelValues(path.Base(req.URL.Path)).Inc)
			f.versions = t.versions
			f.versions.add(f.unchanged)
		}
		resp.Body = f
		return resp, nil
	}
	return stripWhole(resp, strings.HasPrefix(req.Header.Get("Accept"), metadataProtobuf+"List"), e)
}

// stripWhole rewrites a LIST (or single object) response read in full.
func stripWhole(resp *http.Response, list bool, e edit) (*http.Response, error) {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	inner := objectShape
	if list {
		inner = listShape
	}
	if n, ok := strip(b, envelopeOf(inner), e); ok {
		b = b[:n]
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// frameStripper rewrites a protobuf watch stream frame by frame: each frame is
// a 4-byte big-endian length and a bare WatchEvent (no envelope) whose object
// is an envelope of a PartialObjectMetadata. The frame buffer
// is reused, so stripping allocates nothing per event. With edit.uids, a
// frame of an object it refuses is skipped whole; with unchanged, an
// unchanged object's event is left out, and bookmarks (built in out) stand
// for those. err is the stream's end, once reached.
type frameStripper struct {
	body      io.ReadCloser
	edit      edit
	unchanged *unchangedEvents
	versions  *ResourceVersions // knows unchanged while the stream lasts
	buf, out  []byte
	pending   []byte
	err       error
}

// maxFrame bounds a frame, as client-go's own reader does (16 MiB objects and then some).
const maxFrame = 64 << 20

func (f *frameStripper) Read(p []byte) (int, error) {
	if len(f.pending) == 0 {
		if err := f.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// next reads and strips one frame. A read error is returned exactly as the
// connection gave it: client-go compares the stream's error with io.EOF and
// io.ErrUnexpectedEOF using ==, and takes anything else for a watch error,
// which makes the reflector list the whole kind again instead of resuming the
// watch from its last resourceVersion.
func (f *frameStripper) next() error {
	for {
		keep, err := f.read()
		if err != nil || keep {
			return err
		}
	}
}

// read reads and strips one frame into f.pending; keep is false for a frame
// of an object edit.uids refuses (f.pending is then empty).
func (f *frameStripper) read() (keep bool, err error) {
	if f.err != nil {
		return false, f.err
	}
	var header [4]byte
	if _, err := io.ReadFull(f.body, header[:]); err != nil {
		return f.end(err) // io.EOF between frames, io.ErrUnexpectedEOF inside a header
	}
	size := int(binary.BigEndian.Uint32(header[:]))
	if size > maxFrame {
		return false, fmt.Errorf("watch frame of %d bytes exceeds %d", size, maxFrame)
	}
	if cap(f.buf) < 4+size {
		f.buf = make([]byte, 4+size)
	}
	frame := f.buf[4 : 4+size]
	if _, err := io.ReadFull(f.body, frame); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the header promised a frame
		}
		return f.end(err)
	}
	if f.edit.uids != nil && !keepEvent(frame, f.edit.uids.Keep) {
		f.edit.uids.dropped()
		return false, nil
	}
	n, stripped := strip(frame, eventShape, f.edit)
	if stripped {
		size = n
	}
	if f.unchanged != nil {
		if !stripped {
			f.unchanged.rejected() // a frame the stripper rejects is the decoder's to judge
		} else if bookmark, skip := f.unchanged.next(frame[:size], f.out); skip {
			return false, nil
		} else if bookmark != nil {
			f.out, f.pending = bookmark, bookmark
			return true, nil
		}
	}
	binary.BigEndian.PutUint32(f.buf[:4], uint32(size))
	f.pending = f.buf[:4+size]
	return true, nil
}

// end is the stream's end, err exactly as the connection gave it: first,
// though, the bookmark of the unchanged events held back, so that the
// reflector resumes after them.
func (f *frameStripper) end(err error) (keep bool, _ error) {
	if f.unchanged == nil {
		return false, err
	}
	f.err = err
	if bookmark := f.unchanged.flush(f.out); bookmark != nil {
		f.out, f.pending = bookmark, bookmark
		return true, nil
	}
	return false, err
}

func (f *frameStripper) Close() error {
	if f.unchanged != nil {
		f.versions.remove(f.unchanged)
	}
	return f.body.Close()
}
