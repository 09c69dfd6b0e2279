package pmcp_test

import (
	"testing"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/eventstoretest"
)

func TestMemoryEventStoreContract(t *testing.T) {
	eventstoretest.Run(t, func(t *testing.T, l eventstoretest.Limits) pmcp.EventStore {
		return pmcp.NewMemoryEventStore(pmcp.MemoryEventStoreOptions{MaxStreamEvents: l.MaxStreamEvents, MaxSessionBytes: l.MaxSessionBytes})
	})
}
