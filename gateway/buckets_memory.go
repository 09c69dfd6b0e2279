package gateway

import (
	"context"
	"math"
	"sync"
	"time"
)

// DefaultMaxBuckets bounds the buckets a MemoryBuckets keeps.
const DefaultMaxBuckets = 100_000

// MemoryBuckets is a Buckets kept in this process (one gateway replica;
// see package github.com/gopmcp/pmcp/redis for buckets replicas share).
// It keeps at most Max buckets: when a new key finds it full, the buckets
// that refilled completely (equal to a new one, so nothing is lost) are
// dropped, and when none has, the one idle longest. The zero value is
// ready to use.
type MemoryBuckets struct {
	// Max bounds the buckets kept; 0 means DefaultMaxBuckets.
	Max int
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu sync.Mutex
	m  map[string]*memBucket
}

type memBucket struct {
	tokens    float64
	last      time.Time
	perSecond float64
	burst     float64
}

var _ Buckets = (*MemoryBuckets)(nil)

// Take implements Buckets. It fails only for a rule no bucket can follow
// (perSecond not a finite number above 0, or burst below 1), with
// ErrInvalidConfig, as compile would.
func (b *MemoryBuckets) Take(_ context.Context, key string, perSecond float64, burst int) (time.Duration, error) {
	if !validRate(perSecond) || burst < 1 {
		return 0, invalid("bucket %q: perSecond %v, burst %d", key, perSecond, burst)
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]*memBucket)
	}
	bk := b.m[key]
	if bk == nil {
		b.makeRoom(now)
		bk = &memBucket{tokens: float64(burst), last: now}
		b.m[key] = bk
	}
	bk.perSecond, bk.burst = perSecond, float64(burst)
	if dt := now.Sub(bk.last); dt > 0 {
		bk.tokens = math.Min(float64(burst), bk.tokens+dt.Seconds()*perSecond)
		bk.last = now
	}
	bk.tokens = math.Min(bk.tokens, float64(burst))
	if bk.tokens >= 1 {
		bk.tokens--
		return 0, nil
	}
	wait := time.Duration((1 - bk.tokens) / perSecond * float64(time.Second))
	return max(wait, time.Millisecond), nil
}

// Len is the number of buckets kept.
func (b *MemoryBuckets) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

func (b *MemoryBuckets) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// makeRoom drops buckets when the map is full (see MemoryBuckets).
func (b *MemoryBuckets) makeRoom(now time.Time) {
	limit := b.Max
	if limit <= 0 {
		limit = DefaultMaxBuckets
	}
	if len(b.m) < limit {
		return
	}
	var oldest string
	var oldestAt time.Time
	for k, bk := range b.m {
		if bk.tokens+now.Sub(bk.last).Seconds()*bk.perSecond >= bk.burst {
			delete(b.m, k)
			continue
		}
		if oldest == "" || bk.last.Before(oldestAt) {
			oldest, oldestAt = k, bk.last
		}
	}
	if len(b.m) >= limit && oldest != "" {
		delete(b.m, oldest)
	}
}
