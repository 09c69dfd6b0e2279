package bucketstest

import (
	"context"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/gateway"
)

// refBuckets is the simplest correct gateway.Buckets, here only to show
// the suite passes a right implementation (the stores run it themselves).
// Its wrong field breaks it on purpose, to show the suite fails a store
// that gets one rule wrong.
type refBuckets struct {
	mu    sync.Mutex
	m     map[string]*refBucket
	wrong string
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
	k.tokens += now.Sub(k.at).Seconds() * perSecond
	if b.wrong != "uncapped" {
		k.tokens = math.Min(float64(burst), k.tokens)
	}
	if !ok && b.wrong == "startsOverfull" {
		k.tokens++
	}
	k.at = now
	if k.tokens >= 1 {
		k.tokens--
		return 0, nil
	}
	d := time.Duration(math.Ceil((1 - k.tokens) / perSecond * 1e9))
	switch b.wrong {
	case "refusalsTake":
		k.tokens--
	case "hintOneSecond":
		d = time.Second
	}
	return d, nil
}

func TestReferenceBuckets(t *testing.T) {
	Run(t, func(t *testing.T) gateway.Buckets { return &refBuckets{m: map[string]*refBucket{}} })
}

// slowBuckets answers every Take after a round trip of rtt, half before the
// store sees it and half after: what a loaded machine does to a Redis
// store (CI saw round trips of several milliseconds).
type slowBuckets struct {
	gateway.Buckets
	rtt time.Duration
}

func (s slowBuckets) Take(ctx context.Context, key string, perSecond float64, burst int) (time.Duration, error) {
	time.Sleep(s.rtt / 2)
	d, err := s.Buckets.Take(ctx, key, perSecond, burst)
	time.Sleep(s.rtt / 2)
	return d, err
}

// The suite judges a correct store correct however slow its round trips:
// tokens that refill while the suite drains a bucket are the store being
// right, not a failure.
func TestReferenceBucketsSlowStore(t *testing.T) {
	for _, rtt := range []time.Duration{3 * time.Millisecond, 12 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			Run(t, func(t *testing.T) gateway.Buckets {
				return slowBuckets{&refBuckets{m: map[string]*refBucket{}}, rtt}
			})
		})
	}
}

// The suite fails a store that breaks one rule, in the subtest that owns
// the rule. Each wrong store runs in a child process (its failure must not
// fail this test); the parent reads the child's verdict.
func TestSuiteFailsWrongStores(t *testing.T) {
	for wrong, subtest := range map[string]string{
		"startsOverfull": "StartsFullAtBurst",
		"uncapped":       "RefillCappedAtBurst",
		"refusalsTake":   "RefusalsTakeNothing",
		"hintOneSecond":  "RetryAfterIsTimeToNextToken",
	} {
		t.Run(wrong, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestWrongStoreChild$", "-test.v")
			cmd.Env = append(os.Environ(), "BUCKETSTEST_WRONG="+wrong)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store whose %s is wrong:\n%s", wrong, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestWrongStoreChild/"+subtest+" ") {
				t.Fatalf("the suite failed, but not in %s:\n%s", subtest, out)
			}
		})
	}
}

// TestWrongStoreChild is TestSuiteFailsWrongStores's child; run on its own
// it does nothing.
func TestWrongStoreChild(t *testing.T) {
	wrong := os.Getenv("BUCKETSTEST_WRONG")
	if wrong == "" {
		return
	}
	Run(t, func(t *testing.T) gateway.Buckets { return &refBuckets{m: map[string]*refBucket{}, wrong: wrong} })
}
