// Package apiserver is what metawatch learns from the API server before
// anything watches: which kinds it serves, as what resource and scope
// (Resolve, through controller-runtime's lazy discovery), and whether it
// answers at all (Unreachable, RetryUnreachable). An unreachable API server
// at start-up is waited for, with a message each time; an answer about the
// request (a kind it does not serve, a forbidden read) is reported at once.
package apiserver
