package proxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/jsonrpc"
	"github.com/gopmcp/pmcp/reqstate"
)

// Task ids bound to their principal. A downstream task id is
//
//	upstream prefix + tag + upstream task id
//
// where tag is a MAC (HMAC-SHA-256, truncated to 128 bits, unpadded
// base64url: tagLen characters) over the principal that created the task
// (RequestHandlerExtra.Principal), the upstream's name and the upstream's
// task id. Modern downstream requests (and every request with
// Options.Shared) share one upstream session, so the upstream id alone
// would let any principal reach another's task; with the tag, an id shown
// to one principal verifies for no other, and answers exactly as an
// unknown id does. Ids are deterministic, so the same task has the same id
// in tasks/call, tasks/list and status notifications, and nothing is kept
// in the proxy. The MAC keys are derived from Options.RequestStateKeys
// (the first mints, every one verifies, so a ring rotates as reqstate's
// does); replicas sharing the ring accept each other's ids.

const (
	tagBytes = 16
	tagLen   = (tagBytes*8 + 5) / 6
	// maxUpstreamTaskID bounds the upstream task ids the bridge shows
	// (a UUID is 36 bytes), and so the length of downstream ids.
	maxUpstreamTaskID = 128
)

var tagEnc = base64.RawURLEncoding

// taskIDs mints and opens downstream task ids.
type taskIDs struct {
	keys [][]byte
}

func newTaskIDs(ring []reqstate.Key) (*taskIDs, error) {
	t := &taskIDs{}
	for _, k := range ring {
		m := hmac.New(sha256.New, k.Secret)
		m.Write([]byte("pmcp/proxy/task-id/v1"))
		t.keys = append(t.keys, m.Sum(nil))
	}
	if len(t.keys) == 0 {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		t.keys = [][]byte{k}
	}
	return t, nil
}

func (t *taskIDs) tag(key []byte, principal string, up *upstream, id string) [tagLen]byte {
	m := hmac.New(sha256.New, key)
	field := func(h hash.Hash, s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(m, principal)
	field(m, up.name)
	field(m, id)
	var sum [sha256.Size]byte
	var out [tagLen]byte
	tagEnc.Encode(out[:], m.Sum(sum[:0])[:tagBytes])
	return out
}

// mint is the downstream id of up's task id for principal.
func (t *taskIDs) mint(principal string, up *upstream, id string) string {
	tag := t.tag(t.keys[0], principal, up, id)
	return up.prefix + string(tag[:]) + id
}

// open returns the upstream task id of rest (a downstream id without up's
// prefix) when rest was minted for principal.
func (t *taskIDs) open(principal string, up *upstream, rest string) (string, bool) {
	if len(rest) <= tagLen || len(rest) > tagLen+maxUpstreamTaskID {
		return "", false
	}
	got, id := rest[:tagLen], rest[tagLen:]
	for _, k := range t.keys {
		want := t.tag(k, principal, up, id)
		if hmac.Equal(want[:], []byte(got)) {
			return id, true
		}
	}
	return "", false
}

// taskOwner is the principal the tasks of req are bound to.
func taskOwner(req *pmcp.Request) (string, error) {
	id, ok := req.Extra.Principal()
	if !ok {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks need an identified caller: the request's authentication names no principal"}
	}
	return id, nil
}
