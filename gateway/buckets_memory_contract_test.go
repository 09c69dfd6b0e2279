package gateway_test

import (
	"testing"

	"github.com/gopmcp/pmcp/gateway"
	"github.com/gopmcp/pmcp/gateway/bucketstest"
)

// TestMemoryBucketsContract: the in-memory buckets pass the contract every
// gateway.Buckets must (the Redis ones pass it too).
func TestMemoryBucketsContract(t *testing.T) {
	bucketstest.Run(t, func(*testing.T) gateway.Buckets { return &gateway.MemoryBuckets{} })
}
