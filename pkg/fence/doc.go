// Package fence decides, at the moment a write request is sent, whether this
// replica may still send it.
//
// A replica writes an object only under a claim: the leader-election Lease
// (LeaderClaim), or, sharded, the Lease of the object's bucket together with
// a recent renewal of the replica's membership (sharding.Ring). A claim that
// was valid when a write was admitted may have ended by the time the request
// leaves: the write may wait in the client's rate limiter, or the process may
// be paused (a long GC, a frozen VM, SIGSTOP) between the two. So the claim
// is checked again in the HTTP transport (Wrap), after the rate limiter, and
// the request carries a deadline at the claim's end, so that it is abandoned,
// not sent, if it cannot leave before another replica may hold the claim.
//
// What no client can fence is a request already handed to the network when
// the claim ends: a held connection may deliver it later. For that, every
// write of metawatch also carries a resourceVersion precondition, so that the
// API server refuses it if anyone wrote the object since (see
// pkg/controller).
package fence
