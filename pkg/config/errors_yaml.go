package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// typeError turns a decoding error about a value of the wrong type (which
// encoding/json words with Go type names: "cannot unmarshal string into Go
// struct field Watch.watches.namespaces of type []string") into one in the
// user's words: the field path with indices, the line in the YAML, what was
// expected and what was found. It returns nil when there is no such error.
func typeError(yamlData, jsonData []byte) error {
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(jsonData, &Config{}); !errors.As(err, &te) {
		return nil
	}
	path := pathAt(jsonData, te.Offset)
	where := renderPath(path)
	if line := lineOf(yamlData, path); line > 0 {
		where += fmt.Sprintf(" (line %d)", line)
	}
	hint := ""
	if te.Type.Kind() == reflect.String && (te.Value == "bool" || strings.HasPrefix(te.Value, "number")) {
		hint = `: quote it, e.g. "true" or "1" (YAML reads true, yes, on and numbers unquoted as other types)`
	}
	return fmt.Errorf("%s: expected %s, found %s%s", where, describeType(te.Type), describeValue(te.Value), hint)
}

// segment is one step of a path: a field name, or a list index.
type segment struct {
	key   string
	index int // -1 for a key
}

// pathAt is the path of the JSON value that ends at offset (where
// encoding/json reports a type error: after the value, or after the opening
// bracket of a list or object).
func pathAt(data []byte, offset int64) []segment {
	path, _ := walk(json.NewDecoder(bytes.NewReader(data)), nil, offset)
	return path
}

func walk(dec *json.Decoder, path []segment, offset int64) ([]segment, bool) {
	tok, err := dec.Token()
	if err != nil {
		return path, true
	}
	if dec.InputOffset() >= offset {
		return path, true
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return path, true
			}
			name, _ := key.(string)
			if p, found := walk(dec, append(path[:len(path):len(path)], segment{key: name, index: -1}), offset); found {
				return p, true
			}
		}
		_, _ = dec.Token()
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if p, found := walk(dec, append(path[:len(path):len(path)], segment{index: i}), offset); found {
				return p, true
			}
		}
		_, _ = dec.Token()
	}
	return nil, false
}

func renderPath(path []segment) string {
	var b strings.Builder
	for _, s := range path {
		if s.index >= 0 {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		if strings.ContainsAny(s.key, "./") { // a label or annotation key, as field paths write it
			b.WriteString("[" + s.key + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	if b.Len() == 0 {
		return "the configuration"
	}
	return b.String()
}

// lineOf is the YAML line of path's value, or 0.
func lineOf(yamlData []byte, path []segment) int {
	var doc yamlv3.Node
	if yamlv3.Unmarshal(yamlData, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	node := doc.Content[0]
	for _, s := range path {
		node = child(node, s)
		if node == nil {
			return 0
		}
	}
	return node.Line
}

func child(node *yamlv3.Node, s segment) *yamlv3.Node {
	switch {
	case s.index >= 0 && node.Kind == yamlv3.SequenceNode && s.index < len(node.Content):
		return node.Content[s.index]
	case s.index < 0 && node.Kind == yamlv3.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == s.key {
				return node.Content[i+1]
			}
		}
	}
	return nil
}

// describeType names what a field holds, in YAML terms.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return describeType(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "a number"
	case reflect.Slice:
		return "a list of " + plural(t.Elem()) + " (e.g. [a, b])"
	case reflect.Map:
		return "a map of " + plural(t.Elem()) + " (key: value)"
	case reflect.Struct:
		return "an object (fields of key: value)"
	}
	return t.Kind().String()
}

func plural(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "strings"
	case reflect.Struct, reflect.Pointer:
		return "objects"
	}
	return "values"
}

// describeValue names what encoding/json found ("string", "array", "number 5", ...).
func describeValue(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number"):
		return "a number"
	}
	return v
}
