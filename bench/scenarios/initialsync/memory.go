package initialsync

import (
	"fmt"
	"strings"

	"github.com/metawatch/metawatch/bench/probe"
)

// MemoryRow is a resident set and the Go runtime's account of its memory
// taken at the same moment: a variant's steady set or its most during the
// sync or the relist, a sharded replica's (who says which).
type MemoryRow struct {
	Pods   int
	Who    string
	RSS    int64
	Memory map[string]uint64
}

// MemoryTable splits each steady resident set, and the most resident set
// read during the sync and the relist (rows), by the Go runtime's own
// account, taken at the same moment: the heap the last GC found live, the
// garbage allocated since (collected at the next GC), the heap's room in
// spans no object uses, free heap not yet returned to the kernel, stacks,
// the runtime's metadata and other, and what the resident set holds beyond
// what the runtime has mapped and kept (the binary; pages mapped but never
// touched make it smaller). What a memory goal is short by is in one of them.
func MemoryTable(b *strings.Builder, all []MemoryRow) {
	var rows strings.Builder
	for _, r := range all {
		steadyMemoryRow(&rows, r.Pods, r.Who, r.RSS, r.Memory)
	}
	b.WriteString("\n## Where the resident set is, steady and at its peaks\n\n")
	b.WriteString("Each steady resident set, and the most read during the sync and the relist (read every 100 ms, so " +
		"up to a few MiB below the kernel's high-water mark), split by the Go runtime's account of its memory at the same moment " +
		"(runtime/metrics: `/gc/heap/live`, `/memory/classes/...`), in MiB. Garbage is what was allocated since the " +
		"last GC and goes at the next; heap room is span space no object uses; free is heap the runtime keeps but " +
		"does not use (the scavenger returns it slowly); outside is the resident set beyond what the runtime " +
		"has mapped and kept: the binary, less pages mapped but never touched.\n\n")
	b.WriteString("| pods cached | variant | RSS | live heap | garbage | heap room | heap free | stacks | runtime | outside |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	b.WriteString(rows.String())
}

func steadyMemoryRow(b *strings.Builder, pods int, who string, rss int64, m map[string]uint64) {
	if len(m) == 0 || rss <= 0 {
		return
	}
	signed := func(name string) int64 { return int64(m[name]) }
	live, objects := signed(probe.LiveHeapMetric), signed(probe.HeapObjectsClass)
	stacks := signed(probe.HeapStacksClass) + signed(probe.OSStacksClass)
	kept := signed(probe.TotalClass) - signed(probe.HeapReleasedClass)
	runtimeOwn := kept - objects - signed(probe.HeapUnusedClass) - signed(probe.HeapFreeClass) - stacks
	fmt.Fprintf(b, "| %d | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", pods, who, inMiB(rss),
		inMiB(live), inMiB(max(objects-live, 0)), inMiB(signed(probe.HeapUnusedClass)), inMiB(signed(probe.HeapFreeClass)), inMiB(stacks),
		inMiB(runtimeOwn), inMiB(rss-kept))
}

// inMiB is bytes in MiB.
func inMiB(b int64) float64 { return float64(b) / (1 << 20) }
