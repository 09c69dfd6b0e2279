package auth

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Default limits of the JWKS cache.
const (
	// DefaultJWKSMaxBytes caps a JWKS document.
	DefaultJWKSMaxBytes = 256 << 10
	// DefaultJWKSMaxKeys caps the keys kept from one JWKS document.
	DefaultJWKSMaxKeys = 64
	// DefaultJWKSFetchTimeout bounds one JWKS fetch.
	DefaultJWKSFetchTimeout = 5 * time.Second
	// DefaultJWKSRefreshMinInterval rate-limits JWKS fetches: after any
	// fetch (or failed fetch) the next waits this long, except that one
	// refresh for an unknown kid is allowed per interval (a key rotated
	// in just after a fetch). A flood of tokens with made-up key ids thus
	// costs at most one extra fetch per interval.
	DefaultJWKSRefreshMinInterval = 30 * time.Second
	// DefaultJWKSMaxAge is how long a fetched key set is used before it
	// is fetched again (a failed refetch keeps the old keys).
	DefaultJWKSMaxAge = time.Hour
)

// errUnknownKey: no key of the set matches the token.
var errUnknownKey = errors.New("auth: no key in the key set matches the token")

// keySet is a remote JWKS, fetched lazily, refreshed on an unknown kid,
// and never fetched more often than minInterval. It starts no goroutine.
type keySet struct {
	url         string
	client      *http.Client
	maxBytes    int64
	timeout     time.Duration
	minInterval time.Duration
	maxAge      time.Duration
	now         func() time.Time

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	fetchedAt time.Time // of the keys
	attemptAt time.Time // of the last fetch, failed or not
	refreshAt time.Time // of the last fetch caused by an unknown kid
	lastErr   error
	inflight  chan struct{} // closed when the running fetch ends
	fetches   uint64
}

// lookup returns the keys that may verify a token with key id kid
// (every key when kid is empty) and algorithm alg.
func (k *keySet) lookup(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	refreshed := false
	for {
		k.mu.Lock()
		if ch := k.inflight; ch != nil {
			k.mu.Unlock()
			select {
			case <-ch:
				refreshed = true
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: %w", ErrVerifierUnavailable, ctx.Err())
			}
		}
		now := k.now()
		fresh := !k.fetchedAt.IsZero() && now.Sub(k.fetchedAt) < k.maxAge
		found := matchKeys(k.keys, kid, alg)
		// Any fetch waits minInterval after the previous one; an unknown
		// kid may also trigger one refresh per minInterval right after a
		// successful fetch (a key rotated in just after it).
		unknownKid := len(found) == 0 && len(k.keys) > 0 && k.lastErr == nil &&
			(k.refreshAt.IsZero() || now.Sub(k.refreshAt) >= k.minInterval)
		mayFetch := k.attemptAt.IsZero() || now.Sub(k.attemptAt) >= k.minInterval || unknownKid
		if (len(found) > 0 && fresh) || refreshed || !mayFetch {
			err, never := k.lastErr, k.fetchedAt.IsZero()
			k.mu.Unlock()
			if len(found) > 0 {
				return found, nil
			}
			if never && err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w (kid %q)", ErrInvalidToken, errUnknownKey, kid)
		}
		ch := make(chan struct{})
		k.inflight, k.attemptAt = ch, now
		if len(found) == 0 && len(k.keys) > 0 {
			k.refreshAt = now
		}
		k.fetches++
		k.mu.Unlock()

		keys, err := k.fetch(ctx)

		k.mu.Lock()
		if err == nil {
			sameKeyObjects(keys, k.keys)
			k.keys, k.fetchedAt, k.lastErr = keys, k.now(), nil
		} else {
			k.lastErr = err
		}
		k.inflight = nil
		close(ch)
		k.mu.Unlock()
		refreshed = true
	}
}

// holds reports whether the key set still has the public key pub for
// kid and alg, as lookup followed by hasKey would, but without allocating
// when the key set is fresh and holds that very key object (which a
// refetch keeps for unchanged keys, see sameKeyObjects). now is the
// caller's clock reading.
func (k *keySet) holds(ctx context.Context, kid, alg string, pub any, now time.Time) bool {
	k.mu.Lock()
	if k.inflight == nil && !k.fetchedAt.IsZero() && now.Sub(k.fetchedAt) < k.maxAge {
		for i := range k.keys {
			if keyMatches(&k.keys[i], kid, alg) && samePointer(k.keys[i].Key, pub) {
				k.mu.Unlock()
				return true
			}
		}
	}
	k.mu.Unlock()
	keys, err := k.lookup(ctx, kid, alg)
	return err == nil && hasKey(keys, pub)
}

// sameKeyObjects makes the keys of a refetched key set that are unchanged
// (same kid, same key material) the objects of the previous set, so that
// tokens remembered as verified by them still match by identity (holds).
func sameKeyObjects(fetched, old []jose.JSONWebKey) {
	for i := range fetched {
		p, ok := fetched[i].Key.(interface{ Equal(crypto.PublicKey) bool })
		if !ok {
			continue
		}
		for j := range old {
			if old[j].KeyID == fetched[i].KeyID && p.Equal(old[j].Key) {
				fetched[i].Key = old[j].Key
				break
			}
		}
	}
}

// fetch reads and parses the key set, within the size and time bounds.
// The fetch is shared by every waiting request, so the caller going away
// does not cancel it (the timeout still bounds it).
func (k *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: JWKS: %w", ErrVerifierUnavailable, err)
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: JWKS: %w", ErrVerifierUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: JWKS: status %d", ErrVerifierUnavailable, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, k.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: JWKS: %w", ErrVerifierUnavailable, err)
	}
	if int64(len(body)) > k.maxBytes {
		return nil, fmt.Errorf("%w: JWKS larger than %d bytes", ErrVerifierUnavailable, k.maxBytes)
	}
	return parseJWKS(body)
}

// parseJWKS keeps the usable public signing keys of a JWKS document:
// keys it cannot parse, symmetric or private keys, and keys whose "use"
// is not "sig" are skipped; a document with none left is an error.
func parseJWKS(body []byte) ([]jose.JSONWebKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: JWKS: %w", ErrVerifierUnavailable, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		if len(keys) == DefaultJWKSMaxKeys {
			break
		}
		var key jose.JSONWebKey
		if err := key.UnmarshalJSON(raw); err != nil || !key.Valid() || !key.IsPublic() {
			continue
		}
		if key.Use != "" && key.Use != "sig" {
			continue
		}
		if !asymmetric(key.Key) {
			continue
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: JWKS has no usable signing key", ErrVerifierUnavailable)
	}
	return keys, nil
}

// matchKeys returns the keys with key id kid (all keys when kid is empty)
// whose declared algorithm, if any, is alg.
func matchKeys(keys []jose.JSONWebKey, kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for i := range keys {
		if keyMatches(&keys[i], kid, alg) {
			out = append(out, keys[i])
		}
	}
	return out
}

// keyMatches reports whether key may verify a token with key id kid
// (any key when kid is empty) and algorithm alg.
func keyMatches(key *jose.JSONWebKey, kid, alg string) bool {
	return (kid == "" || key.KeyID == kid) && (key.Algorithm == "" || key.Algorithm == alg)
}
