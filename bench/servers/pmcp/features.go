package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/auth"
	"github.com/gopmcp/pmcp/bench/internal/harness"
	pmcpotel "github.com/gopmcp/pmcp/otel"
	"github.com/gopmcp/pmcp/tasks"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The feature-cost leg runs this server with one feature on (-feature) and
// compares it with -feature plain in the same run:
//
//	plain      no feature
//	accesslog  the access log: a JSON slog handler at Info (formatted, then discarded)
//	otel       pmcp/otel server middleware, every span sampled, a no-op exporter
//	           called synchronously (simple span processor)
//	otelbatch  the same through the batch span processor
//	jwt        bearer JWT auth (auth package): ES256 tokens, the JWKS fetched
//	           once and cached; the token is written to -token-out for the
//	           load generator
//	task       tasks on (in-memory store) and the task-capable tool
//	           echo_task, which completes at once; the load generator's
//	           round is create (tools/call as a task) -> tasks/get
//	           (completed) [-> tasks/result in the 2025-11-25 era]
//	spin       a control, not a feature: -spin of pure CPU work (no
//	           allocation, no memory traffic) after pmcp wrote the response
//	           and before net/http flushes it, where the access log runs.
//	           Its delta over plain shows how much a feature's measured
//	           cost exceeds the CPU it spends itself (scheduling, kernel
//	           and cache effects of the closed loop on a shared machine).
var (
	feature  = flag.String("feature", "plain", "plain, accesslog, otel, otelbatch, jwt, task or spin")
	spinFor  = flag.Duration("spin", 1400*time.Nanosecond, "spin: CPU time to spend per HTTP request")
	tokenOut = flag.String("token-out", "", "jwt: write the bearer token to `file`")
)

// serverOptions returns the ServerOptions of the feature.
func serverOptions() pmcp.ServerOptions {
	// The stream tool's updates go out back to back: a burst of
	// harness.StreamNotes passes the progress rate limit.
	o := pmcp.ServerOptions{Name: "bench-pmcp", Version: "1.0.0", ProgressBurst: harness.StreamNotes}
	switch *feature {
	case "plain", "jwt", "spin":
	case "task":
		o.Tasks = &pmcp.TaskOptions{StoreOptions: taskStoreOptions}
	case "accesslog":
		o.Logger = slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	case "otel", "otelbatch":
		// Every span is sampled, recorded and ended into a no-op
		// exporter: synchronously (simple span processor) for otel,
		// through the batch span processor production setups use for
		// otelbatch.
		sp := sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())
		if *feature == "otelbatch" {
			sp = sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(sp))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		o.Middleware = []pmcp.Middleware{pmcpotel.ServerMiddleware(pmcpotel.Options{TracerProvider: tp, MeterProvider: mp})}
	default:
		fmt.Fprintf(os.Stderr, "unknown -feature %q\n", *feature)
		os.Exit(2)
	}
	return o
}

// taskStoreOptions size the task store for a closed loop of thousands of
// rounds per second: every round leaves a completed task behind until its
// lifetime ends (the 2025-11-25 generator asks for taskTTL, the 2026-07-28
// era gets the store's default), so the lifetime is short and the count
// bounds are far above what taskTTL plus a sweep interval hold at that
// rate. The defaults (1 hour, 10,000 tasks, 1,000 per owner) would fill
// within a second and turn every later round into an error.
var taskStoreOptions = tasks.Options{
	DefaultTTL:       taskTTL,
	MaxTTL:           taskTTL,
	MaxTasks:         500_000,
	MaxTasksPerOwner: 500_000,
}

// taskTTL is the lifetime of a bench task.
const taskTTL = 2 * time.Second

// withFeature adds the HTTP side of the feature (jwt) to opts.
func withFeature(opts pmcp.StreamableHTTPOptions) pmcp.StreamableHTTPOptions {
	if *feature != "jwt" {
		return opts
	}
	addr := flag.Lookup("addr").Value.String()
	resource := "http://" + addr + "/mcp"
	const issuer = "https://as.bench.invalid"
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	jwks := jwksOf(&key.PublicKey, "k1")
	// The JWKS is served in process: the verifier fetches it once and
	// caches it, so no other endpoint takes part in the measurement.
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(jwks)), ContentLength: int64(len(jwks)), Request: r}, nil
	})}
	v, err := auth.NewJWTVerifier(auth.JWTOptions{JWKSURL: "https://as.bench.invalid/jwks", Issuer: issuer, Audience: resource, HTTPClient: hc})
	if err != nil {
		panic(err)
	}
	a, err := auth.NewAuthenticator(auth.Options{Verifier: v, Resource: resource})
	if err != nil {
		panic(err)
	}
	opts.Authenticate = a.Authenticate
	tok := signES256(key, "k1", map[string]any{
		"iss": issuer, "aud": resource, "sub": "bench-user", "client_id": "bench-load",
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	})
	if *tokenOut == "" {
		panic("-feature jwt needs -token-out")
	}
	if err := os.WriteFile(*tokenOut, []byte(tok), 0o600); err != nil {
		panic(err)
	}
	return opts
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func pad32(n *big.Int) []byte { return n.FillBytes(make([]byte, 32)) }

func jwksOf(pub *ecdsa.PublicKey, kid string) []byte {
	b, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
		"x": b64(pad32(pub.X)), "y": b64(pad32(pub.Y)),
	}}})
	return b
}

// signES256 returns a compact JWS of claims (RFC 7515, ES256).
func signES256(key *ecdsa.PrivateKey, kid string, claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": "at+jwt", "kid": kid})
	c, _ := json.Marshal(claims)
	input := b64(h) + "." + b64(c)
	sum := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + b64(append(pad32(r), pad32(s)...))
}

// withSpin wraps h for the spin control: after h served a request (the
// response is written into net/http's buffer, not yet flushed), it spends
// *spinFor of CPU in a loop calibrated at start.
func withSpin(h http.Handler) http.Handler {
	if *feature != "spin" {
		return h
	}
	n := spinIterations(*spinFor)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		spinLoop(n, uint64(r.ContentLength))
	})
}

// spinIterations returns how many iterations of spinLoop take d, from the
// fastest of a few timed runs (the slower ones were interrupted).
func spinIterations(d time.Duration) int {
	const n = 2_000_000
	best := time.Duration(1<<63 - 1)
	for range 5 {
		t := time.Now()
		spinLoop(n, 1)
		best = min(best, time.Since(t))
	}
	return int(float64(d) * n / float64(max(best, 1)))
}

// spinLoop is n steps of a linear congruential generator from x: a
// dependency chain of multiplications the compiler cannot shorten, in a
// call it does not inline or drop.
//
//go:noinline
func spinLoop(n int, x uint64) uint64 {
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}
