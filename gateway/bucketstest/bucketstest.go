// Package bucketstest is the contract every gateway.Buckets must pass:
// the token-bucket behaviour the gateway's rate limits rely on, whichever
// store (in memory, or Redis shared by replicas) keeps the buckets.
//
// A store's test runs it with one line:
//
//	func TestBucketsContract(t *testing.T) {
//		bucketstest.Run(t, func(t *testing.T) gateway.Buckets {
//			return mystore.NewBuckets(...) // empty, or under a fresh prefix
//		})
//	}
//
// The suite checks what Take returns, never a store's bookkeeping. Some
// subtests wait for a bucket to refill (the retry hint a store returns is
// the thing under test, so the wait is the store's own answer), none for
// more than a fraction of a second.
package bucketstest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/gateway"
)

// Factory returns buckets in which every key is new (a fresh store, or a
// fresh key prefix on a shared one). The suite closes nothing: the
// factory registers its own cleanup.
type Factory func(t *testing.T) gateway.Buckets

// Run runs the contract suite against buckets made by newBuckets.
func Run(t *testing.T, newBuckets Factory) {
	tests := []struct {
		name string
		run  func(*env)
	}{
		{"StartsFullAtBurst", testStartsFull},
		{"RetryAfterIsTimeToNextToken", testRetryAfter},
		{"Refills", testRefills},
		{"RefillCappedAtBurst", testRefillCap},
		{"RefusalsTakeNothing", testRefusalsTakeNothing},
		{"KeysIndependent", testKeysIndependent},
		{"ConcurrentTakesNeverOverAdmit", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(&env{t: t, b: newBuckets(t), ctx: t.Context()})
		})
	}
}

type env struct {
	t   *testing.T
	b   gateway.Buckets
	ctx context.Context
}

func (e *env) take(key string, perSecond float64, burst int) time.Duration {
	e.t.Helper()
	d, err := e.b.Take(e.ctx, key, perSecond, burst)
	if err != nil {
		e.t.Fatalf("Take(%q, %v, %d): %v", key, perSecond, burst, err)
	}
	if d < 0 {
		e.t.Fatalf("Take(%q, %v, %d) = %v, negative", key, perSecond, burst, d)
	}
	return d
}

// admit takes n tokens that must all be there.
func (e *env) admit(key string, perSecond float64, burst, n int) {
	e.t.Helper()
	for i := range n {
		if d := e.take(key, perSecond, burst); d != 0 {
			e.t.Fatalf("Take %d of %d from %q (burst %d) refused, retry after %v", i+1, n, key, burst, d)
		}
	}
}

// refuse takes a token that must not be there and returns the hint.
func (e *env) refuse(key string, perSecond float64, burst int) time.Duration {
	e.t.Helper()
	d := e.take(key, perSecond, burst)
	if d == 0 {
		e.t.Fatalf("Take from empty %q (burst %d) admitted", key, burst)
	}
	return d
}

// drain takes from a bucket until a Take is refused and returns how many
// were admitted, the refusal's hint and the time the draining took. Tokens
// may refill while it drains (a Take is a round trip, several
// milliseconds on a loaded machine): the caller bounds the count by
// burst plus what the rate refilled meanwhile, so a correct store passes
// however slow and a store that over-admits still fails.
func (e *env) drain(key string, perSecond float64, burst int) (admitted int, hint, elapsed time.Duration) {
	e.t.Helper()
	start := time.Now()
	for {
		if d := e.take(key, perSecond, burst); d != 0 {
			return admitted, d, time.Since(start)
		}
		admitted++
		// A bucket that refills as fast as Takes return is never empty; the
		// suite's rates keep a token's refill far above a round trip, so
		// this many admissions is a store that does not count.
		if admitted > 4*burst+16 {
			e.t.Fatalf("%d Takes from %q (burst %d, %v/s) admitted in %v and none refused",
				admitted, key, burst, perSecond, time.Since(start))
		}
	}
}

// drained checks what drain saw of a bucket that was full when it began:
// at least burst admitted, at most burst plus the refill.
func (e *env) drained(key string, perSecond float64, burst, admitted int, elapsed time.Duration) {
	e.t.Helper()
	if max := burst + int(perSecond*elapsed.Seconds()); admitted < burst || admitted > max {
		e.t.Fatalf("%q: %d Takes admitted before a refusal in %v, want %d (burst) to %d (burst plus refill at %v/s)",
			key, admitted, elapsed, burst, max, perSecond)
	}
}

// slack covers a store rounding its hint up (Redis answers in whole
// microseconds).
const slack = time.Millisecond

// A new bucket holds burst tokens; the burst+1-th Take is refused with a
// hint of one token's refill time, less what refilled meanwhile.
func testStartsFull(e *env) {
	const rate, burst = 1.0, 5
	start := time.Now()
	e.admit("k", rate, burst, burst)
	d := e.refuse("k", rate, burst)
	elapsed := time.Since(start)
	if d > time.Second+slack || d < time.Second-elapsed {
		e.t.Fatalf("retry after %v with %v elapsed since the bucket was full, want in [1s-%v, 1s]", d, elapsed, elapsed)
	}
}

// The hint follows the rate, fractional rates included. A full bucket is
// drained until refused: the hint is then at most one token's refill time
// and at least that less the draining time (tokens refilled meanwhile).
func testRetryAfter(e *env) {
	for _, tc := range []struct {
		key   string
		rate  float64
		burst int
		want  time.Duration
	}{
		{"half", 0.5, 1, 2 * time.Second},
		{"fast", 50, 3, 20 * time.Millisecond},
		{"third", 3, 2, time.Second / 3},
	} {
		n, d, elapsed := e.drain(tc.key, tc.rate, tc.burst)
		e.drained(tc.key, tc.rate, tc.burst, n, elapsed)
		if d > tc.want+slack || d < tc.want-elapsed {
			e.t.Errorf("%s: rate %v: retry after %v (%v elapsed), want ≈ %v", tc.key, tc.rate, d, elapsed, tc.want)
		}
	}
}

// After waiting the hint, a token is there again.
func testRefills(e *env) {
	const rate, burst = 20.0, 2
	n, d, elapsed := e.drain("k", rate, burst)
	e.drained("k", rate, burst, n, elapsed)
	for range 3 {
		time.Sleep(d)
		e.admit("k", rate, burst, 1)
		d = e.take("k", rate, burst)
		if d == 0 {
			// A token refilled during the round trip; the next hint is a
			// whole token's time away at most.
			d = e.refuse("k", rate, burst)
		}
	}
}

// An idle bucket refills to burst, never beyond: after an idle spell worth
// five tokens, draining admits burst plus only what refilled while draining.
func testRefillCap(e *env) {
	const rate, burst = 25.0, 2
	e.drain("k", rate, burst)
	time.Sleep(200 * time.Millisecond) // 5 tokens' worth of refill
	n, _, elapsed := e.drain("k", rate, burst)
	e.drained("k", rate, burst, n, elapsed)
}

// Refused Takes do not dig the bucket deeper: the first hint still holds
// after more refusals (as many as fit well before it runs out).
func testRefusalsTakeNothing(e *env) {
	const rate, burst = 4.0, 1
	e.admit("k", rate, burst, burst)
	first := e.refuse("k", rate, burst)
	deadline := time.Now().Add(first)
	for i := 0; i < 20 && time.Until(deadline) > first/2; i++ {
		e.refuse("k", rate, burst)
	}
	time.Sleep(time.Until(deadline))
	e.admit("k", rate, burst, 1)
}

// Emptying one bucket leaves the others full.
func testKeysIndependent(e *env) {
	const rate, burst = 1.0, 3
	e.admit("a", rate, burst, burst)
	e.refuse("a", rate, burst)
	e.admit("b", rate, burst, burst)
	e.admit("a:b", rate, burst, burst)
	e.refuse("b", rate, burst)
	e.refuse("a", rate, burst)
}

// Many goroutines racing for one bucket get exactly burst tokens (plus
// what refilled while they raced, which the rate keeps below one).
func testConcurrent(e *env) {
	const rate, burst, workers, each = 0.01, 40, 32, 8
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for range each {
				d, err := e.b.Take(e.ctx, "k", rate, burst)
				switch {
				case err != nil:
					e.t.Errorf("Take: %v", err)
					return
				case d == 0:
					admitted.Add(1)
				default:
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	limit := burst + int64(rate*time.Since(start).Seconds())
	if got := admitted.Load(); got > limit || got < burst {
		e.t.Fatalf("%d of %d concurrent Takes admitted, want %d (burst %d, rate %v)", got, workers*each, limit, burst, rate)
	}
	if admitted.Load()+refused.Load() != workers*each {
		e.t.Fatalf("%d admitted + %d refused != %d", admitted.Load(), refused.Load(), workers*each)
	}
}
