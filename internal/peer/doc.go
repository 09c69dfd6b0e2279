// Package peer holds what the client side of pmcp does with a server's
// answers, shared by the root package's client and package oauthclient so
// that each rule has one copy: CapString bounds a server-controlled
// string before it enters an error or a log record, DrainClose finishes a
// response body so that its connection can be reused, SameOrigin compares
// the origins of two URLs.
package peer
