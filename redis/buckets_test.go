package redis

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/gopmcp/pmcp/gateway"
	"github.com/gopmcp/pmcp/gateway/bucketstest"
)

func TestBucketsContract(t *testing.T) {
	rdb := needRedis(t)
	bucketstest.Run(t, func(t *testing.T) gateway.Buckets {
		return NewBuckets(rdb, BucketsOptions{Prefix: uniquePrefix("rl")})
	})
}

// A bucket's key expires when the bucket would be full again, so idle
// buckets cost Redis nothing.
func TestBucketsExpireWhenFull(t *testing.T) {
	rdb := needRedis(t)
	prefix := uniquePrefix("rl")
	b := NewBuckets(rdb, BucketsOptions{Prefix: prefix})
	ctx := t.Context()
	for range 3 {
		if _, err := b.Take(ctx, "k", 2, 4); err != nil {
			t.Fatal(err)
		}
	}
	// 3 of 4 tokens taken at 2 a second: full again in 1.5 s, plus the
	// script's 1 s margin.
	ttl, err := rdb.PTTL(ctx, prefix+":k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 2*time.Second || ttl > 2500*time.Millisecond {
		t.Fatalf("bucket TTL %v, want (2s, 2.5s]", ttl)
	}
}

func TestBucketsErrors(t *testing.T) {
	rdb := needRedis(t)
	b := NewBuckets(rdb, BucketsOptions{Prefix: uniquePrefix("rl")})
	for _, r := range []struct {
		rate  float64
		burst int
	}{{0, 1}, {-1, 1}, {1, 0}} {
		if _, err := b.Take(t.Context(), "k", r.rate, r.burst); !errors.Is(err, errBadRule) {
			t.Errorf("Take(rate %v, burst %d) = %v, want errBadRule", r.rate, r.burst, err)
		}
	}
	// Redis unreachable: an error, never an admission.
	down := goredis.NewUniversalClient(&goredis.UniversalOptions{Addrs: []string{redisAddr}})
	_ = down.Close()
	if d, err := NewBuckets(down, BucketsOptions{}).Take(t.Context(), "k", 1, 1); err == nil {
		t.Fatalf("Take on a closed client = %v, nil error", d)
	}
}

// bucketsChildEnv carries a child process's orders (a bucketsChild as
// JSON); its presence makes TestBucketsChildProcess act as the child.
const bucketsChildEnv = "PMCP_TEST_BUCKETS_CHILD"

type bucketsChild struct {
	Prefix    string
	Key       string
	PerSecond float64
	Burst     int
	For       time.Duration
	Workers   int
}

type bucketsChildResult struct {
	Admitted, Refused int64
	First, Last       time.Time // the first Take's start, the last one's end
}

// Two OS processes sharing one Redis and one rule admit no more than the
// rule allows in total: burst + perSecond × the time they took for.
// Buckets per process would admit about twice that.
func TestBucketsMultiProcess(t *testing.T) {
	needRedis(t)
	orders := bucketsChild{Prefix: uniquePrefix("rl"), Key: "rule0:bob", PerSecond: 50, Burst: 20, For: 1500 * time.Millisecond, Workers: 4}
	ordersJSON, err := json.Marshal(orders)
	if err != nil {
		t.Fatal(err)
	}
	results := make([]bucketsChildResult, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBucketsChildProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), bucketsChildEnv+"="+string(ordersJSON), "PMCP_REDIS_ADDR="+redisAddr)
			dieWithParent(cmd)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("child %d: %v\n%s", i, err, out)
				return
			}
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if line, ok := strings.CutPrefix(sc.Text(), "BUCKETS-RESULT "); ok {
					if err := json.Unmarshal([]byte(line), &results[i]); err != nil {
						t.Errorf("child %d result %q: %v", i, line, err)
					}
					return
				}
			}
			t.Errorf("child %d printed no result:\n%s", i, out)
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	first, last := results[0].First, results[0].Last
	var admitted int64
	for _, r := range results {
		admitted += r.Admitted
		if r.First.Before(first) {
			first = r.First
		}
		if r.Last.After(last) {
			last = r.Last
		}
		if r.Admitted+r.Refused == 0 {
			t.Fatalf("a child made no Take: %+v", results)
		}
	}
	elapsed := last.Sub(first)
	limit := float64(orders.Burst) + orders.PerSecond*elapsed.Seconds()
	t.Logf("children %+v: %d admitted in %v, limit %.1f", results, admitted, elapsed, limit)
	if float64(admitted) > limit+1 { // +1: a token refilling in the instant of measuring
		t.Fatalf("two processes admitted %d calls in %v; the shared rule (burst %d, %v/s) allows %.1f", admitted, elapsed, orders.Burst, orders.PerSecond, limit)
	}
	// Both hammer the bucket all along, so it must also have refilled:
	// at least half the rate's share (a loaded machine slows the children).
	if float64(admitted) < float64(orders.Burst)+orders.PerSecond*elapsed.Seconds()/2 {
		t.Fatalf("only %d admitted in %v: the shared bucket does not refill", admitted, elapsed)
	}
}

// TestBucketsChildProcess is the child of TestBucketsMultiProcess (and
// does nothing when run otherwise): it takes from the shared bucket with
// several goroutines for a while and prints what it got.
func TestBucketsChildProcess(t *testing.T) {
	raw := os.Getenv(bucketsChildEnv)
	if raw == "" {
		return
	}
	var o bucketsChild
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		t.Fatal(err)
	}
	b := NewBuckets(needRedis(t), BucketsOptions{Prefix: o.Prefix})
	ctx, cancel := context.WithTimeout(t.Context(), o.For+10*time.Second)
	defer cancel()
	var admitted, refused atomic.Int64
	var mu sync.Mutex
	var first, last time.Time
	deadline := time.Now().Add(o.For)
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				start := time.Now()
				d, err := b.Take(ctx, o.Key, o.PerSecond, o.Burst)
				end := time.Now()
				if err != nil {
					t.Errorf("Take: %v", err)
					return
				}
				if d == 0 {
					admitted.Add(1)
				} else {
					refused.Add(1)
				}
				mu.Lock()
				if first.IsZero() || start.Before(first) {
					first = start
				}
				if end.After(last) {
					last = end
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res, _ := json.Marshal(bucketsChildResult{Admitted: admitted.Load(), Refused: refused.Load(), First: first, Last: last})
	fmt.Printf("BUCKETS-RESULT %s\n", res)
}
