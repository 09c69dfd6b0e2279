package bucketstest

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/gateway"
)

// refBuckets is the simplest correct gateway.Buckets, here only to show
// the suite passes a right implementation (the stores run it themselves).
type refBuckets struct {
	mu sync.Mutex
	m  map[string]*refBucket
}

type refBucket struct {
	tokens float64
	at     time.Time
}

func (b *refBuckets) Take(_ context.Context, key string, perSecond float64, burst int) (time.Duration, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	k, ok := b.m[key]
	if !ok {
		k = &refBucket{tokens: float64(burst), at: now}
		b.m[key] = k
	}
	k.tokens = math.Min(float64(burst), k.tokens+now.Sub(k.at).Seconds()*perSecond)
	k.at = now
	if k.tokens >= 1 {
		k.tokens--
		return 0, nil
	}
	return time.Duration(math.Ceil((1 - k.tokens) / perSecond * 1e9)), nil
}

func TestReferenceBuckets(t *testing.T) {
	Run(t, func(t *testing.T) gateway.Buckets { return &refBuckets{m: map[string]*refBucket{}} })
}
