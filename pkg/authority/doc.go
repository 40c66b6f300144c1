// Package authority is who may write, and as whom: everything a write of
// metawatch passes before it reaches the API server, and the one reading of
// what became of it.
//
// Every writer (the rules' controllers, adoption, the admission policies'
// Syncer and Pruner) writes through a Guard built once per generation:
//
//   - the field manager it writes as (fieldmanager.go), one per installation;
//   - the generation's WriteFence, closed before a Lease is released or a
//     generation swapped, and waited for;
//   - sharded, the ShardGate: only the replica holding the object's bucket
//     writes it (sharding.Ring);
//   - the Claim: the leader Lease (LeaderClaim), or sharded the Ring.
//
// Classify sorts every write's error into an Outcome (written, not sent,
// send soon, gone, stale, conflict, failed), so that every writer acts on the
// same reading. Package pace, below this one, paces the writes that pass.
//
// # Why the claim is checked twice
//
// A claim that was valid when a write was admitted may have ended by the time
// the request leaves: the write may wait in the client's rate limiter, or
// the process may be paused (a long GC, a frozen VM, SIGSTOP) between the
// two. So the claim is checked again in the HTTP transport (Wrap), after the
// rate limiter, and the request carries a deadline at the claim's end, so
// that it is abandoned, not sent, if it cannot leave before another replica
// may hold the claim.
//
// What no client can fence is a request already handed to the network when
// the claim ends: a held connection may deliver it later. For that, every
// write of metawatch also carries a resourceVersion precondition, so that the
// API server refuses it (Stale) if anyone wrote the object since.
package authority
