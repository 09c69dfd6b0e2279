package redis

import (
	"testing"

	"github.com/gopmcp/pmcp/tasks"
	"github.com/gopmcp/pmcp/tasks/storetest"
)

func TestTaskStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts tasks.Options) tasks.Store {
		rdb := needRedis(t)
		s, err := NewTaskStore(t.Context(), rdb, TaskStoreOptions{Tasks: opts, Prefix: uniquePrefix("tasks")})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
