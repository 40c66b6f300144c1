package bill

import (
	"fmt"
	"strings"
)

// Share is what the local kube-apiserver spent while one variant
// ran: the bill scenario's readings, each taken against the server's own
// state just before the variant started.
type Share struct {
	// RSSBeforeBytes is the API server's resident set before the variant started.
	RSSBeforeBytes int64 `json:"rssBeforeBytes"`
	// StartSeconds and StartCPUSeconds: from the variant's start until its
	// caches were synced and its first reconciles settled (the harness
	// then waits for two quiet seconds), and the API server's CPU meanwhile.
	StartSeconds    float64 `json:"startSeconds"`
	StartCPUSeconds float64 `json:"startCPUSeconds"`
	// StartPeakRSSBytes is the API server's peak resident set over that time
	// (its high-water mark, reset as the variant started).
	StartPeakRSSBytes int64 `json:"startPeakRSSBytes"`
	// SteadyRSSBytes is its resident set once the variant had run idle for
	// the steady window (0: no steady window).
	SteadyRSSBytes int64 `json:"steadyRSSBytes,omitempty"`
	// FirehoseSeconds and FirehoseCPUSeconds: the firehose's window (until
	// the variant was quiet again) and the API server's CPU in it.
	FirehoseSeconds    float64 `json:"firehoseSeconds,omitempty"`
	FirehoseCPUSeconds float64 `json:"firehoseCPUSeconds,omitempty"`
}

// Reference is the bill's reference at one size: the local API
// server with no variant watching, idle and under the same firehose.
type Reference struct {
	N int `json:"n"`
	// RSSBytes is its resident set, idle.
	RSSBytes int64 `json:"rssBytes"`
	// IdleCPUPerSecond is its CPU per second of an idle window.
	IdleCPUPerSecond float64 `json:"idleCPUPerSecond"`
	// FirehoseSeconds, FirehoseCPUSeconds and FirehoseStatusUpdates: the
	// same status-only updates, with nothing watching.
	FirehoseSeconds       float64 `json:"firehoseSeconds"`
	FirehoseCPUSeconds    float64 `json:"firehoseCPUSeconds"`
	FirehoseStatusUpdates int     `json:"firehoseStatusUpdates"`
}

// Row is one variant's figures at one size the report's section reads:
// its share of the API server (nil where no bill was taken), and its own
// bytes of pods in the sync and under the firehose.
type Row struct {
	N       int
	Variant string
	// Deployed is the chart variant, measured from outside its process.
	Deployed bool
	Share    *Share
	// PodBytesPerPod is what it received of pods in its sync (lists and
	// watches of pods, not discovery or its writes' answers) per cached pod.
	PodBytesPerPod float64
	// Firehose is its firehose's figures, nil where it did not run it.
	Firehose *FirehoseCounts
}

// FirehoseCounts are what the bill reads of a variant's firehose.
type FirehoseCounts struct {
	StatusUpdates int
	Events        int64
	ReceivedBytes int64
}

// Table is the report's section of the scenario, the control plane's bill:
// per variant (rows), what the API server sent it and what watching cost
// the server beyond the same work unwatched (refs, one per size).
func Table(b *strings.Builder, all []Row, refs []Reference) {
	b.WriteString("\n## The control plane's bill\n\n")
	b.WriteString("What each variant costs the API server, beyond what it spends without it. Bytes are what the variant received of pods " +
		"(the API server's list and watch responses, in the variant's content type, as its transport hands them over: after gzip, where the server compressed, " +
		"so the bytes on the wire can be fewer). CPU and memory are the local kube-apiserver's, read from its " +
		"process. Start: from the variant's start until it had synced and its first reconciles had settled, the API server's CPU beyond the idle " +
		"server's over the same time, and its peak resident set over what it held just before. Firehose: its CPU per 1000 status updates beyond " +
		"the same updates with nothing watching (the last table). Steady: its resident set after the steady window, over the same before. " +
		"An API server gives memory back slowly, so the before of each variant is what the ones before it left.\n\n")
	b.WriteString("| pods | variant | bytes / cached pod | bytes / status event | API server CPU s, start | API server CPU ms / 1000 status updates | " +
		"API server RSS before | start peak | steady |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	rows := 0
	for _, r := range all {
		alone := referenceAt(refs, r.N)
		if r.Share == nil || alone == nil {
			continue
		}
		rows++
		s := r.Share
		steady := "-"
		if s.SteadyRSSBytes > 0 {
			steady = signedMiB(s.SteadyRSSBytes - s.RSSBeforeBytes)
		}
		fmt.Fprintf(b, "| %d | %s | %s | %s | %.2f | %s | %.0f MiB | %s | %s |\n", r.N, r.Variant, bytesPerPod(r), bytesPerEvent(r),
			max(s.StartCPUSeconds-alone.IdleCPUPerSecond*s.StartSeconds, 0), firehoseShare(r, *alone),
			inMiB(s.RSSBeforeBytes), signedMiB(s.StartPeakRSSBytes-s.RSSBeforeBytes), steady)
	}
	if rows == 0 {
		return
	}
	b.WriteString("\n| pods | nothing watching: API server RSS | idle CPU / s | firehose: status updates | CPU s | CPU ms / 1000 status updates |\n" +
		"|---:|---:|---:|---:|---:|---:|\n")
	for _, a := range refs {
		fmt.Fprintf(b, "| %d | %.0f MiB | %.3f | %d | %.2f | %.1f |\n", a.N, inMiB(a.RSSBytes), a.IdleCPUPerSecond, a.FirehoseStatusUpdates,
			a.FirehoseCPUSeconds, perThousand(a.FirehoseCPUSeconds-a.IdleCPUPerSecond*a.FirehoseSeconds, a.FirehoseStatusUpdates))
	}
}

// referenceAt is the bill's reference at n pods, nil without one.
func referenceAt(refs []Reference, n int) *Reference {
	for i := range refs {
		if refs[i].N == n {
			return &refs[i]
		}
	}
	return nil
}

// bytesPerPod is what the variant received of pods in its sync per cached
// pod, "-" for the chart (measured from outside).
func bytesPerPod(r Row) string {
	if r.Deployed {
		return "-"
	}
	return fmt.Sprintf("%.0f", r.PodBytesPerPod)
}

// bytesPerEvent is what the variant received under the firehose per watch
// event, "-" where it did not run it.
func bytesPerEvent(r Row) string {
	if r.Firehose == nil || r.Firehose.Events == 0 || r.Deployed {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(r.Firehose.ReceivedBytes)/float64(r.Firehose.Events))
}

// firehoseShare is the API server's CPU per 1000 status updates with r
// watching, beyond idle, less the same without it: what watching added.
func firehoseShare(r Row, alone Reference) string {
	s := r.Share
	if r.Firehose == nil || r.Firehose.StatusUpdates == 0 || alone.FirehoseStatusUpdates == 0 {
		return "-"
	}
	with := perThousand(s.FirehoseCPUSeconds-alone.IdleCPUPerSecond*s.FirehoseSeconds, r.Firehose.StatusUpdates)
	without := perThousand(alone.FirehoseCPUSeconds-alone.IdleCPUPerSecond*alone.FirehoseSeconds, alone.FirehoseStatusUpdates)
	return fmt.Sprintf("%.1f", with-without)
}

// perThousand is cpuSeconds in milliseconds per 1000 of n.
func perThousand(cpuSeconds float64, n int) float64 {
	return 1000 * cpuSeconds / float64(max(n, 1)) * 1000
}

// signedMiB is a difference of bytes in MiB, with its sign.
func signedMiB(bytes int64) string { return fmt.Sprintf("%+.0f MiB", inMiB(bytes)) }

// inMiB is bytes in MiB.
func inMiB(b int64) float64 { return float64(b) / (1 << 20) }
