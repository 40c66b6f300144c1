package preview

import (
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Inputs are files of objects, to be read more than once: a first pass
// finds the Namespaces and owners (which may come after the objects that
// need them), a second reports on each object, each pass an object at a
// time.
type Inputs struct{ files []input }

type input struct {
	name string
	f    *os.File
}

// OpenInputs opens paths in order; "-" is stdin, copied first to a
// temporary file (removed at once: it goes when the file is closed or
// the process ends) so that it can be read again.
func OpenInputs(paths []string, stdin io.Reader) (*Inputs, error) {
	in := &Inputs{}
	for _, p := range paths {
		name, f, err := "stdin", (*os.File)(nil), error(nil)
		if p == "-" {
			f, err = spool(stdin)
		} else {
			name = p
			f, err = os.Open(p)
		}
		if err != nil {
			_ = in.Close()
			return nil, err
		}
		in.files = append(in.files, input{name: name, f: f})
	}
	return in, nil
}

func spool(stdin io.Reader) (*os.File, error) {
	f, err := os.CreateTemp("", "metawatch-objects-*")
	if err != nil {
		return nil, fmt.Errorf("keeping stdin to read it twice: %w", err)
	}
	_ = os.Remove(f.Name())
	if _, err := io.Copy(f, stdin); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("keeping stdin to read it twice: %w", err)
	}
	return f, nil
}

// Each reads every object of every file, in order, from the start (see
// Stream): an error of reading names the file, an error of each is
// returned as it is.
func (in *Inputs) Each(selected []string, each func(*unstructured.Unstructured) error) error {
	for _, file := range in.files {
		if _, err := file.f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("%s: %w", file.name, err)
		}
		var eachErr error
		err := Stream(file.f, selected, func(obj *unstructured.Unstructured) error {
			eachErr = each(obj)
			return eachErr
		})
		if err != nil && err == eachErr { //nolint:errorlint // each's own error, as it is
			return err
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file.name, err)
		}
	}
	return nil
}

// Close closes the files.
func (in *Inputs) Close() error {
	var first error
	for _, file := range in.files {
		if err := file.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
