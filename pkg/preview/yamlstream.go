package preview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// yamlDocuments reads YAML documents (separated by --- lines, as
// apimachinery's YAMLReader splits them), numbered from doc.
//
// A document's items (the block sequence of a top-level items key, as
// kubectl get -o yaml writes a List) are cut out of it by their lines and
// read one at a time: an item is the lines from its dash, at the
// sequence's indentation, to the next one or to the next top-level key (a
// line that begins with neither a space nor the dash); YAML has an item's
// content indented further. The rest of the document
// (apiVersion, kind, metadata) is read whole. What this does not cut (a
// List written in flow style, items: [...]) is read whole too. An anchor
// in one item cannot be used in another (kubectl writes none).
func (s *stream) yamlDocuments(br *bufio.Reader, doc int) error {
	lines := &lineReader{r: br}
	for ; ; doc++ {
		d := &yamlDocument{stream: s, seq: -1, index: -1}
		empty, err := d.read(lines)
		if errors.Is(err, io.EOF) && empty {
			return nil
		}
		if err == nil || errors.Is(err, io.EOF) {
			err = d.end()
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", doc, err)
		}
	}
}

// yamlDocument is one YAML document being read.
type yamlDocument struct {
	*stream
	rest bytes.Buffer // all but the items
	line int          // the number of the last line read
	// items: the line of a top-level "items:" key, and the comments after
	// it, until the next line says whether a block sequence follows.
	items []byte
	// seq is the items' indentation while they are read, else -1; listed:
	// the document had them (it is a List).
	seq    int
	listed bool
	// whole: the document's first line (started: read) is indented, and
	// it is read whole (its top-level keys are not where a List's are cut).
	started, whole bool
	// item is the item being read (its lines), the index-th (from 0; -1
	// before the first), from line at.
	item      bytes.Buffer
	index, at int
}

// read reads the document's lines up to the next separator (or the end:
// io.EOF); empty: it had none.
func (d *yamlDocument) read(lines *lineReader) (empty bool, err error) {
	for {
		line, err := lines.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return false, err
		}
		if isSeparator(line) {
			if rest := bytes.TrimSpace(line[3:]); len(rest) > 0 && rest[0] != '#' {
				return false, fmt.Errorf("invalid YAML document separator: %s", rest)
			}
			if d.line > 0 {
				return false, err
			}
		}
		// A separator that begins a document is one of its lines, as in
		// apimachinery's YAMLReader (YAML reads it as the document's start),
		// so that documents are numbered as there.
		if len(line) > 0 || err == nil {
			d.line++
			if err := d.add(line); err != nil {
				return false, err
			}
		}
		if err != nil {
			return d.line == 0, err
		}
	}
}

func isSeparator(line []byte) bool { return bytes.HasPrefix(line, []byte("---")) }

// add takes one line of the document (with its newline).
func (d *yamlDocument) add(line []byte) error {
	indent, content := indentation(line)
	switch {
	case d.seq >= 0 && (blank(content) || indent > 0 || (d.seq == 0 && isDash(content))):
		// An item's line, or one YAML refuses there (less indented than
		// the dashes, not at a top-level key's): the item's parse says so.
		return d.addToItems(line, indent, content)
	case d.seq >= 0: // a top-level key: the items are over
		d.seq = -1
		if err := d.flushItem(); err != nil {
			return err
		}
	case d.items != nil && blank(content):
		d.items = append(d.items, line...)
		return nil
	case d.items != nil && isDash(content): // "items:" has a block sequence
		// The rest keeps the key, empty, so that YAML reads the rest
		// as it reads the document: what may follow the items.
		d.rest.Write(d.items)
		d.seq, d.listed, d.items = indent, true, nil
		return d.addToItems(line, indent, content)
	case d.items != nil:
		d.rest.Write(d.items)
		d.items = nil
	}
	if !d.started && !blank(content) && !isSeparator(content) {
		d.started, d.whole = true, indent > 0 // the top-level keys are not at the line's start
	}
	if !d.listed && !d.whole && indent == 0 && isItemsKey(content) {
		d.items = append([]byte{}, line...)
		return nil
	}
	d.rest.Write(line)
	return nil
}

// addToItems takes a line of the items: the start of the next item, or
// one of the current item's lines.
func (d *yamlDocument) addToItems(line []byte, indent int, content []byte) error {
	if indent == d.seq && isDash(content) {
		if err := d.flushItem(); err != nil {
			return err
		}
		d.index, d.at = d.index+1, d.line
	} else if d.item.Len() == 0 {
		return nil // a comment before the first item
	}
	d.item.Write(line)
	return nil
}

// flushItem reads the item read so far, under an items key as in the
// document, so that YAML reads it as there.
func (d *yamlDocument) flushItem() error {
	if d.item.Len() == 0 {
		return nil
	}
	defer d.item.Reset()
	raw, err := yaml.YAMLToJSON(append([]byte("items:\n"), d.item.Bytes()...))
	if err != nil {
		return itemError(d.index, fmt.Errorf("error converting YAML to JSON: %w", inDocument(err, d.at-2)))
	}
	var one struct{ Items []json.RawMessage }
	if err := json.Unmarshal(raw, &one); err != nil || len(one.Items) != 1 {
		return itemError(d.index, fmt.Errorf("line %d: not one list item", d.at))
	}
	if err := objectsOf(one.Items[0], d.selected, true, d.emit); err != nil {
		return itemError(d.index, err)
	}
	return nil
}

// end reads what is left of the document: its last item, and the rest,
// which is the object if the document is not a List.
func (d *yamlDocument) end() error {
	if err := d.flushItem(); err != nil {
		return err
	}
	d.rest.Write(d.items)
	raw, err := yaml.YAMLToJSON(d.rest.Bytes())
	if err != nil {
		return fmt.Errorf("error converting YAML to JSON: %w", err)
	}
	if d.listed {
		return nil // a List: its items were the objects
	}
	return objectsOf(raw, d.selected, false, d.emit)
}

// yamlLine is where a YAML error says it is.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+):`)

// inDocument is err of an item's YAML with its line number in the
// document: the item's line plus offset.
func inDocument(err error, offset int) error {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	n, _ := strconv.Atoi(m[1])
	return fmt.Errorf("yaml: line %d:%s", n+offset, strings.TrimPrefix(err.Error(), m[0]))
}

// indentation is the number of spaces that begin line, and what follows.
func indentation(line []byte) (int, []byte) {
	content := bytes.TrimLeft(line, " ")
	return len(line) - len(content), content
}

// blank: an empty line, or a comment.
func blank(content []byte) bool {
	content = bytes.TrimSpace(content)
	return len(content) == 0 || content[0] == '#'
}

// isDash: a block sequence's entry ("- " or a lone "-").
func isDash(content []byte) bool {
	return len(content) > 0 && content[0] == '-' && (len(content) == 1 || content[1] == ' ' || content[1] == '\t' || content[1] == '\n' || content[1] == '\r')
}

// isItemsKey: "items:" with nothing after it but a comment.
func isItemsKey(content []byte) bool {
	rest, ok := bytes.CutPrefix(content, []byte("items:"))
	return ok && blank(rest)
}

// lineReader reads lines, each with a newline, as apimachinery's
// LineReader does (\r\n read as \n).
type lineReader struct{ r *bufio.Reader }

func (l *lineReader) next() ([]byte, error) {
	var out []byte
	for {
		line, isPrefix, err := l.r.ReadLine()
		out = append(out, line...)
		if err != nil || !isPrefix {
			if err == nil || len(out) > 0 {
				out = append(out, '\n')
			}
			return out, err
		}
	}
}
