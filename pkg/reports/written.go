package reports

import (
	"encoding/json"
	"hash/fnv"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What a Writer wrote: per namespace ("" the cluster report), the hash of
// the content it applied last, 0 for a report left by an earlier process
// (to be written again, or deleted).

// contentHash is the hash of a report's content but its results'
// timestamps (the time it was built): an unchanged report is not written.
func contentHash(obj client.Object) uint64 {
	var results []openreports.ReportResult
	var rest any
	switch r := obj.(type) {
	case *openreports.Report:
		c := *r
		results, c.Results = r.Results, nil
		rest = c
	case *openreports.ClusterReport:
		c := *r
		results, c.Results = r.Results, nil
		rest = c
	}
	h := fnv.New64a()
	enc := json.NewEncoder(h)
	_ = enc.Encode(rest)
	for _, res := range results {
		res.Timestamp = metav1.Timestamp{}
		_ = enc.Encode(res)
	}
	return h.Sum64() | 1 // never 0: 0 marks a report to write again
}

func (w *Writer) writtenHash(ns string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	h, ok := w.written[ns]
	if !ok {
		return 0
	}
	return h
}

func (w *Writer) setWritten(ns string, h uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written == nil {
		w.written = map[string]uint64{}
	}
	w.written[ns] = h
}

func (w *Writer) forget(ns string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, ns)
}

func (w *Writer) writtenNamespaces() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.written))
	for ns := range w.written {
		out = append(out, ns)
	}
	return out
}
