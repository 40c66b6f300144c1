// Package pace is metawatch's write rate: how many writes per second it
// sends to the API server, adapted to what the server says of its load,
// between a floor and a ceiling the operator sets (--write-rate-min,
// --write-rate-max).
//
// Why: a fixed client-side rate is wrong both ways. At the old fixed 50
// writes/s a Namespace relabelled over 100k pods took 33 minutes while the
// API server could take about four times that; raised by hand, a fixed rate
// keeps hammering a server that is busy with kubelets and controllers.
//
// How: every write (PATCH, PUT, POST, DELETE of the manager's client:
// server-side applies, merge patches, admission policies) waits for a
// token of a golang.org/x/time/rate limiter in the HTTP transport (Config),
// and tells the Pacer how the server answered. The control law (law.go,
// pure) runs once a second on what the writes saw, and at once on a 429:
//
//   - a 429 (API Priority and Fairness rejected the write: our priority
//     level is out of seats) halves the rate, and pauses every write until
//     its Retry-After has passed, cut to --write-retry-after-max (30 s);
//   - a probe slower than twice its lowest recent latency plus 5 ms (other
//     clients' reads queue behind the writes) multiplies it by 0.8;
//   - otherwise, while writes had to wait for the rate, it climbs: doubling
//     each second until the first sign of load (slow start), then 10
//     writes/s a second;
//   - a second without writes changes nothing.
//
// The cap bounds client-go too: it retries a 429 itself, after sleeping
// for the Retry-After it reads, so the transport cuts the header to the
// cap before client-go reads it. Unbounded, a Retry-After of an hour (a
// proxy's, or a server's mistake) stopped every write for the hour, each
// worker waiting until its write's deadline. And a write whose wait (the
// pause, or its turn at the rate) would end after its deadline is not
// sent: it fails at once with a WaitError saying why, which
// authority.Classify reads as SendSoon (tried again once the wait is over,
// not counted failed), where waiting would only hold a worker until the
// write failed anyway.
//
// The probe (Probe, sent by Start: metawatch probes the selectors
// ConfigMap's metadata) is a small read that API Priority and Fairness
// serves as other clients' reads: its latency is what they feel, which is
// what the rate must protect. It goes every 250 ms while writes flow and
// every 5 s idle, so that its baseline is the idle server's; the tick's
// slowest answer, averaged over ticks, is compared with the lowest recent
// such average. The writes' own latency is not the signal: it rises with
// their own concurrency (Little's law) even when the server queues no one
// else, which held the rate at a third of what the server took. It is the
// fallback without a probe, or after ProbeGrace ticks of a failing one.
//
// Reads are not paced: the caches' lists and watches, and the client's own
// reads, keep --kube-api-qps and --kube-api-burst as their budget. Events
// are not paced either: they have their own client and correlator, which
// bound them, and pacing them would put them in the queue of the writes
// they report on. Leader election has its own client (package manager).
//
// The flow schema and priority level that served the writes (the
// X-Kubernetes-PF-* response headers) are logged when they change and
// published as metawatch_write_priority_level.
package pace
