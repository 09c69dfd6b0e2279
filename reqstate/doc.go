// Package reqstate seals and opens the opaque requestState strings used by
// MCP multi round-trip requests (MRTR).
//
// # Background
//
// When a server handler needs input from the client (elicitation, sampling,
// roots) it answers with an InputRequiredResult carrying inputRequests and an
// opaque requestState string. The client retries the same method and params
// under a new JSON-RPC id, adding inputResponses and echoing requestState
// verbatim. The server keeps nothing between rounds, so everything it needs to
// resume lives inside requestState, which therefore travels through the
// client and must be treated as attacker-controlled.
//
// A [Sealer] turns a [State] (round counter, continuation, accumulated
// answers) into a token that is encrypted and authenticated with AES-256-GCM
// and bound to a [Binding]: the principal, the JSON-RPC method and a digest of
// the request params (see [DigestParams]). [Sealer.Open] verifies and decrypts
// the token; any modification, replay under another principal, method or
// params, or use after the TTL is rejected.
//
// # Token format (version 1)
//
// The token is the unpadded base64url encoding (RFC 4648 §5) of
//
//	version   1 byte   = 0x01
//	key id    8 bytes  = SHA-256(Key.ID)[:8]
//	nonce    12 bytes  random, from crypto/rand
//	sealed    n bytes  AES-256-GCM(plaintext) including the 16-byte tag
//
// The additional authenticated data (AAD), which is not transmitted, is
//
//	version (1 byte) |
//	uvarint(len(Principal)) | Principal |
//	uvarint(len(Method))    | Method    |
//	ParamsDigest (32 bytes)
//
// The plaintext is a compact binary record:
//
//	expiry        8 bytes  big-endian int64, Unix nanoseconds
//	round         1 byte
//	flags         1 byte   bit 0: continuation present, bit 1: answers present,
//	                       all other bits must be zero
//	continuation           if bit 0: uvarint(length) | bytes
//	answers                if bit 1: uvarint(length) | bytes
//
// Trailing bytes are rejected. Continuation and Answers are validated as JSON
// (Answers as a JSON object) by [Sealer.Seal]; [Sealer.Open] does not re-parse
// them, because only a holder of a ring key can produce a token that
// authenticates.
//
// Decoding is canonical: padding, line breaks and non-zero trailing bits are
// rejected, so every accepted token has exactly one string form. Tokens longer
// than Options.MaxTokenBytes are rejected before any decoding or cryptography.
//
// # Threat model
//
// The client (or anyone on the path to it) may replay, truncate, extend,
// reorder, or forge tokens, and may move a token to another session, method or
// set of params. The package guarantees that:
//
//   - the contents of a token are confidential and cannot be modified
//     without detection;
//   - a token only opens for the exact Binding it was sealed for;
//   - a token only opens until its expiry (Options.TTL after sealing);
//   - before authentication only the public structure is inspected (length,
//     encoding, version byte, key id); the expiry and the payload are read
//     only after the GCM tag verified, so unauthenticated bytes can never
//     yield ErrExpired or a State.
//
// A mismatching principal, method or params digest is deliberately
// indistinguishable from tampering: all of them simply make the GCM tag fail,
// and reporting which one failed would require an unauthenticated side channel
// (and would tell an attacker which part of a stolen token to adapt). All of
// them surface as [ErrInvalid].
//
// Within the TTL a token can be replayed by its own principal for the same
// method and params; that only repeats a round the principal was entitled to.
// Handlers with non-idempotent side effects must deduplicate on their own.
//
// Each token uses a fresh random 96-bit nonce, so a single key should not seal
// more than about 2^32 tokens; rotate keys (see below) well before that.
//
// # What callers do with each error
//
//   - nil: resume the handler from the returned State.
//   - [ErrUnknownKey]: the token is well formed but was sealed with a key that
//     is not (or no longer) in the ring. Treat the request as a fresh first
//     call and re-elicit. The key id is not authenticated, so this outcome
//     must never grant anything beyond what a request without requestState
//     would get.
//   - [ErrExpired]: the token is authentic but too old. Treat the request as a
//     fresh first call and re-elicit.
//   - [ErrInvalid]: anything else (bad encoding, wrong version, wrong length,
//     authentication failure, malformed plaintext). Reply with a JSON-RPC
//     error (invalid params); do not run the handler.
//
// # Keys, rotation and replicas
//
// Options.Keys[0] seals; every key in the ring opens. To rotate, prepend a new
// key, keep the old one second until its last tokens expired (one TTL), then
// remove it. Tokens sealed with a removed key yield [ErrUnknownKey].
//
// If Options.Keys is empty, [New] generates one random key. That is fine for a
// single process, but every replica behind a load balancer must share the same
// ring (for example via [KeyFromBase64]), and the state is lost on restart.
// Replicas should also keep their clocks reasonably synchronised, since expiry
// is checked against each replica's Options.Now.
//
// [Key] never prints its secret: String, Format (all verbs), GoString,
// LogValue and MarshalJSON emit the ID and "[REDACTED]". A [Sealer] keeps only
// the expanded AES key schedules, not the Key values.
//
// A Sealer is immutable after [New] and safe for concurrent use.
package reqstate
