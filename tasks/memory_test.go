package tasks_test

import (
	"testing"

	"github.com/gopmcp/pmcp/tasks"
	"github.com/gopmcp/pmcp/tasks/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts tasks.Options) tasks.Store {
		s, err := tasks.NewMemoryStore(opts)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
