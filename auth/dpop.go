package auth

import (
	"container/list"
	"crypto"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/gopmcp/pmcp/oauth"
)

// Default limits of DPoP proof checking (RFC 9449).
const (
	// DefaultDPoPIATWindow is how far a proof's iat may be from the
	// server's clock, either way.
	DefaultDPoPIATWindow = 5 * time.Minute
	// DefaultDPoPReplayCacheSize caps the remembered proof ids (jti); the
	// oldest is forgotten first when it is full.
	DefaultDPoPReplayCacheSize = 1 << 16
	// DefaultDPoPMaxJTIBytes caps a proof's jti.
	DefaultDPoPMaxJTIBytes = 256
)

// DPoPOptions tune DPoP proof checking. The zero value works.
type DPoPOptions struct {
	// Algorithms is the allow-list of proof algorithms. Empty means
	// DefaultAlgorithms; "none" and HS* are refused.
	Algorithms []string
	// IATWindow is how far iat may be from now. Zero means
	// DefaultDPoPIATWindow.
	IATWindow time.Duration
	// ReplayCacheSize caps the remembered jti values. Zero means
	// DefaultDPoPReplayCacheSize.
	ReplayCacheSize int
	// TargetURI is the URI proofs must name in htu. Empty means the
	// Authenticator's Resource (the MCP endpoint), which stays right
	// behind proxies that change the Host or scheme.
	TargetURI string
}

// ErrInvalidDPoPProof: a DPoP proof is missing, malformed, not for this
// request, or replayed.
var ErrInvalidDPoPProof = errors.New("auth: invalid DPoP proof")

type dpopChecker struct {
	algs     []jose.SignatureAlgorithm
	algNames []string
	window   time.Duration
	htu      string
	replay   *replayCache
	now      func() time.Time
}

func newDPoPChecker(opts DPoPOptions, resource string) (*dpopChecker, error) {
	algs, err := allowList(opts.Algorithms)
	if err != nil {
		return nil, fmt.Errorf("auth: DPoPOptions.Algorithms: %w", err)
	}
	d := &dpopChecker{algs: algs, window: opts.IATWindow, now: time.Now}
	for _, a := range algs {
		d.algNames = append(d.algNames, string(a))
	}
	if d.window <= 0 {
		d.window = DefaultDPoPIATWindow
	}
	target := opts.TargetURI
	if target == "" {
		target = resource
	}
	if d.htu, err = oauth.HTU(target); err != nil {
		return nil, fmt.Errorf("auth: DPoPOptions.TargetURI: %w", err)
	}
	size := opts.ReplayCacheSize
	if size <= 0 {
		size = DefaultDPoPReplayCacheSize
	}
	d.replay = &replayCache{max: size, seen: map[[32]byte]*list.Element{}, order: list.New()}
	return d, nil
}

type dpopClaims struct {
	JTI string   `json:"jti"`
	HTM string   `json:"htm"`
	HTU string   `json:"htu"`
	IAT *float64 `json:"iat"`
	ATH string   `json:"ath"`
}

// check verifies the request's DPoP proof for access token token, bound
// to the key thumbprint jkt.
func (d *dpopChecker) check(r *http.Request, token, jkt string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidDPoPProof}, args...)...)
	}
	vals := r.Header.Values("DPoP")
	if len(vals) != 1 {
		return bad("want exactly one DPoP header, got %d", len(vals))
	}
	proof := vals[0]
	if len(proof) > DefaultMaxTokenBytes {
		return bad("larger than %d bytes", DefaultMaxTokenBytes)
	}
	if jkt == "" {
		return bad("the access token is not bound to a key (no cnf.jkt)")
	}
	sig, err := jose.ParseSignedCompact(proof, d.algs)
	if err != nil {
		return bad("%v", err)
	}
	if len(sig.Signatures) != 1 {
		return bad("not a single-signature JWS")
	}
	h := sig.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); !strings.EqualFold(typ, "dpop+jwt") {
		return bad("header typ %q", typ)
	}
	jwk := h.JSONWebKey
	if jwk == nil || !jwk.Valid() || !jwk.IsPublic() || !asymmetric(jwk.Key) {
		return bad("header jwk is missing or not an asymmetric public key")
	}
	payload, err := sig.Verify(jwk.Key)
	if err != nil {
		return bad("signature: %v", err)
	}
	var c dpopClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return bad("claims: %v", err)
	}
	if c.JTI == "" || len(c.JTI) > DefaultDPoPMaxJTIBytes {
		return bad("jti missing or longer than %d bytes", DefaultDPoPMaxJTIBytes)
	}
	if c.HTM != r.Method {
		return bad("htm %q is not the request method", c.HTM)
	}
	if htu, err := oauth.HTU(c.HTU); err != nil || htu != d.htu {
		return bad("htu %q is not this resource", c.HTU)
	}
	if c.IAT == nil {
		return bad("iat missing")
	}
	now := d.now()
	iat := time.Unix(int64(*c.IAT), 0)
	if iat.Before(now.Add(-d.window)) || iat.After(now.Add(d.window)) {
		return bad("iat outside the %v window", d.window)
	}
	sum := sha256.Sum256([]byte(token))
	if ath := base64.RawURLEncoding.EncodeToString(sum[:]); subtle.ConstantTimeCompare([]byte(c.ATH), []byte(ath)) != 1 {
		return bad("ath does not match the access token")
	}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return bad("thumbprint: %v", err)
	}
	if got := base64.RawURLEncoding.EncodeToString(tp); subtle.ConstantTimeCompare([]byte(got), []byte(jkt)) != 1 {
		return bad("proof key does not match the token's cnf.jkt")
	}
	key := sha256.Sum256([]byte(jkt + "\x00" + c.JTI))
	if !d.replay.add(key, iat.Add(d.window), now) {
		return bad("jti replayed")
	}
	return nil
}

// replayCache remembers proof ids until their proofs expire, up to max
// entries (the oldest is forgotten first).
type replayCache struct {
	mu    sync.Mutex
	max   int
	seen  map[[32]byte]*list.Element
	order *list.List // of *replayEntry, oldest first
}

type replayEntry struct {
	key     [32]byte
	expires time.Time
}

// add records key and reports whether it was new (or had expired).
func (c *replayCache) add(key [32]byte, expires, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.order.Front(); e != nil; e = c.order.Front() {
		if re := e.Value.(*replayEntry); re.expires.Before(now) {
			c.order.Remove(e)
			delete(c.seen, re.key)
			continue
		}
		break
	}
	if e, ok := c.seen[key]; ok {
		if e.Value.(*replayEntry).expires.After(now) {
			return false
		}
		c.order.Remove(e)
		delete(c.seen, key)
	}
	for c.order.Len() >= c.max {
		e := c.order.Front()
		c.order.Remove(e)
		delete(c.seen, e.Value.(*replayEntry).key)
	}
	c.seen[key] = c.order.PushBack(&replayEntry{key: key, expires: expires})
	return true
}

func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
