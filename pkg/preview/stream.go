package preview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Stream reads the objects of r, YAML or JSON, several documents, the
// items of Lists (kubectl get -o yaml or -o json), and gives them to each
// one at a time, in order, each trimmed to its apiVersion, kind, metadata
// and the fields of selected (dotted paths: what the watches' field
// selectors read). Its memory is one object, not the input: a List of a
// million pods is read item by item (a JSON List with json.Decoder's
// tokens, a YAML List by its item lines). Errors name the document and
// the item ("document 1: items[3]: ..."); an error of each is returned as
// it is.
//
// As apimachinery's YAMLOrJSONDecoder does, a stream whose first non-space
// byte is { is read as JSON and, if its first document is not JSON (a YAML
// flow mapping also begins with {), as YAML.
func Stream(r io.Reader, selected []string, each func(*unstructured.Unstructured) error) error {
	s := &stream{selected: selected, each: each}
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	if startsWithBrace(br) {
		err = s.jsonDocuments(br)
	} else {
		err = s.yamlDocuments(br, 1)
	}
	if c, ok := errors.AsType[callerError](err); ok {
		return c.err
	}
	return err
}

// stream is one Stream: what it keeps and where to.
type stream struct {
	selected []string
	each     func(*unstructured.Unstructured) error
	// emitted: an object has been given to each (then it is too late to
	// read the stream again as YAML); rec keeps the stream until then.
	emitted bool
	rec     *recorder
}

// callerError is an error of each, returned without a document's name.
type callerError struct{ err error }

func (c callerError) Error() string { return c.err.Error() }

func (s *stream) emit(obj *unstructured.Unstructured) error {
	s.emitted = true
	if s.rec != nil {
		s.rec.stop()
	}
	if err := s.each(obj); err != nil {
		return callerError{err}
	}
	return nil
}

func startsWithBrace(br *bufio.Reader) bool {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n || err != nil {
			return false
		}
		if c := b[n-1]; !unicode.IsSpace(rune(c)) {
			return c == '{'
		}
	}
}

// jsonDocuments reads a stream of JSON documents, each an object or a List.
func (s *stream) jsonDocuments(br *bufio.Reader) error {
	s.rec = &recorder{r: br}
	dec := json.NewDecoder(s.rec)
	for doc := 1; ; doc++ {
		err := s.jsonDocument(dec)
		_, caller := errors.AsType[callerError](err)
		switch {
		case errors.Is(err, errNoDocument):
			return nil
		case err == nil:
		case caller:
			return err
		case doc == 1 && !s.emitted: // perhaps YAML: read it again, as YAML
			return s.yamlDocuments(bufio.NewReader(io.MultiReader(bytes.NewReader(s.rec.kept), br)), doc)
		default:
			return fmt.Errorf("document %d: %w", doc, err)
		}
		s.rec.stop()
	}
}

// errNoDocument: the stream ends where a document could begin.
var errNoDocument = errors.New("no more documents")

// jsonDocument reads one document: an object, whose items (if it has an
// items array) are read and given one by one.
func (s *stream) jsonDocument(dec *json.Decoder) error {
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return errNoDocument
	}
	if err != nil {
		return err
	}
	if err := s.jsonObject(dec, tok); !errors.Is(err, io.EOF) {
		return err
	}
	return io.ErrUnexpectedEOF // the stream ends inside the document
}

// jsonObject reads the rest of a document whose first token is tok.
func (s *stream) jsonObject(dec *json.Decoder, tok json.Token) error {
	switch tok {
	case nil:
		return nil // null: an empty document
	case json.Delim('{'):
	default:
		return fmt.Errorf("expected an object (apiVersion, kind, metadata...), found %s", describeToken(tok))
	}
	top := map[string]json.RawMessage{}
	list := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		if key == "items" && !list {
			if list, err = s.jsonItems(dec); err != nil {
				return err
			}
			if !list { // an object with items that are not a list: skipped, but there
				top["items"] = json.RawMessage("null")
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		top[key.(string)] = raw
	}
	if _, err := dec.Token(); err != nil { // }
		return err
	}
	if list {
		return nil // a List: its items were the objects
	}
	return objectsOfFields(top, s.selected, false, s.emit)
}

// jsonItems reads the value of an object's items: if an array, its
// elements one at a time, each an object (or a List); else the value is
// skipped (an object whose items is not an array is not a List).
func (s *stream) jsonItems(dec *json.Decoder) (list bool, err error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	if tok != json.Delim('[') {
		return false, skipValue(dec, tok)
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return true, itemError(i, err)
		}
		if err := objectsOf(raw, s.selected, true, s.emit); err != nil {
			return true, itemError(i, err)
		}
	}
	_, err = dec.Token() // ]
	return true, err
}

// skipValue reads the rest of a value whose first token is tok.
func skipValue(dec *json.Decoder, tok json.Token) error {
	for depth := 0; ; {
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
		var err error
		if tok, err = dec.Token(); err != nil {
			return err
		}
	}
}

func describeToken(tok json.Token) string {
	if tok == json.Delim('[') {
		return "a list"
	}
	return describeValue(tok)
}

// recorder keeps what is read from r until stop: the start of a JSON
// stream that may have to be read again as YAML. It stops at the first
// object given out, or after the first document, whichever comes first.
type recorder struct {
	r    io.Reader
	kept []byte
	off  bool
}

func (rec *recorder) Read(p []byte) (int, error) {
	n, err := rec.r.Read(p)
	if !rec.off {
		rec.kept = append(rec.kept, p[:n]...)
	}
	return n, err
}

// stop keeps nothing more: the stream is JSON.
func (rec *recorder) stop() { rec.off, rec.kept = true, nil }
