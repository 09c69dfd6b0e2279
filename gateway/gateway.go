// Package gateway is the policy layer of `pmcp gateway`: which tools,
// prompts and resources a caller may see and use, how often it may call
// them, and the audit trail of every request. It sits in front of a
// proxy.Proxy (the aggregation and era translation of `pmcp bridge`) as
// ordinary pmcp server middleware, so it works the same for every
// transport and both protocol eras.
//
// This file holds the two contracts the parts of the package share: the
// token buckets rate limits draw from (in memory, or shared by replicas
// through Redis, see package github.com/gopmcp/pmcp/redis) and the record
// written to the audit trail for each request.
package gateway

import (
	"context"
	"time"
)

// Buckets is a set of token buckets, created on first use and keyed by a
// string the caller builds (a rule and a principal, never anything the
// caller can grow without bound). Take takes one token from the bucket
// named key, which refills at perSecond tokens a second up to burst
// tokens and starts full. It returns 0 when the token was taken, or how
// long until one will be there when the bucket is empty; an error means
// the buckets could not be asked (a Redis outage), and the caller
// decides whether that admits the call.
type Buckets interface {
	Take(ctx context.Context, key string, perSecond float64, burst int) (retryAfter time.Duration, err error)
}

// Decisions recorded in an AuditRecord.
const (
	DecisionAllowed     = "allowed"
	DecisionDenied      = "denied"
	DecisionRateLimited = "rate_limited"
)

// AuditRecord is one line of the audit trail: one per request the
// gateway answered. It never holds a credential; Arguments is empty
// unless the configuration asks for arguments, and then it holds them
// redacted.
type AuditRecord struct {
	Time      time.Time      `json:"time"`
	Subject   string         `json:"subject,omitempty"`
	ClientID  string         `json:"clientId,omitempty"`
	Method    string         `json:"method"`
	Target    string         `json:"target,omitempty"`
	Upstream  string         `json:"upstream,omitempty"`
	Decision  string         `json:"decision"`
	Outcome   string         `json:"outcome"` // "ok" or "error"
	Code      int            `json:"code,omitempty"`
	Duration  time.Duration  `json:"-"` // written as "durationMs" (see the audit log's writer)
	Arguments map[string]any `json:"arguments,omitempty"`
}
