package gateway

import (
	"context"
	"errors"
	"math"
	"testing"
)

// A rule no bucket can follow is refused with ErrInvalidConfig, as the
// Redis buckets refuse it: a NaN rate would poison the bucket.
func TestMemoryBucketsRefuseBadRule(t *testing.T) {
	var b MemoryBuckets
	for _, ps := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := b.Take(context.Background(), "k", ps, 1); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Take(perSecond %v) = %v, want ErrInvalidConfig", ps, err)
		}
	}
	if _, err := b.Take(context.Background(), "k", 1, 0); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Take(burst 0) = %v, want ErrInvalidConfig", err)
	}
	if n := b.Len(); n != 0 {
		t.Errorf("Len = %d after refused rules, want 0", n)
	}
}
