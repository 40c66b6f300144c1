// Package apiserver asks the API server, before anything watches, which kinds
// it serves and whether it answers at all.
//
// Resolve maps a kind to its resource and scope through controller-runtime's
// lazy discovery; Unreachable and RetryUnreachable tell and wait out an API
// server that does not answer. An unreachable API server at start-up is
// waited for, with a message each time; an answer about the request (a kind
// it does not serve, a forbidden read) is reported at once, and so is a TLS
// connection the client's own settings fail (Untrusted: a certificate
// authority that did not sign the server's certificate).
package apiserver
