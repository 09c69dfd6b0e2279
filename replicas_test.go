package pmcp_test

import (
	"errors"
	"testing"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/reqstate"
)

func sharedKeys(t *testing.T) []reqstate.Key {
	t.Helper()
	k, err := reqstate.NewKey("shared-1")
	if err != nil {
		t.Fatal(err)
	}
	return []reqstate.Key{k}
}

// A server configured as a replica (an EventBus) without a shared
// requestState key ring would seal states its peers reject: NewServer
// refuses it at startup.
func TestReplicaNeedsSharedStateKeys(t *testing.T) {
	_, err := pmcp.NewServer(pmcp.ServerOptions{EventBus: &localBus{}})
	if !errors.Is(err, pmcp.ErrSharedKeysRequired) {
		t.Fatalf("NewServer with an EventBus and no RequestStateKeys: err = %v, want ErrSharedKeysRequired", err)
	}
	if _, err := pmcp.NewServer(pmcp.ServerOptions{EventBus: &localBus{}, RequestStateKeys: sharedKeys(t)}); err != nil {
		t.Fatalf("with shared keys: %v", err)
	}
}
