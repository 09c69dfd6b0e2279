package otelenv

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP/HTTP (http/protobuf) exporters of the default build. They are
// ours rather than the otlptracehttp and otlpmetrichttp modules because
// those import gRPC (for configuration shared with their gRPC siblings and
// through the generated collector packages), which tripled what a first
// `go run ./cmd/pmcp` downloads. They read the OTEL_EXPORTER_OTLP_*
// variables the specification defines for OTLP/HTTP: _ENDPOINT (base URL,
// default http://localhost:4318, plus /v1/traces or /v1/metrics) or the
// per-signal _TRACES_ENDPOINT / _METRICS_ENDPOINT (used as is), _HEADERS,
// _TIMEOUT (milliseconds, default 10000, bounding each export with its
// retries), _COMPRESSION (gzip or none), _CERTIFICATE, _CLIENT_CERTIFICATE
// and _CLIENT_KEY, each also per signal; and for metrics
// OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE (cumulative, delta,
// lowmemory) and OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION
// (explicit_bucket_histogram, base2_exponential_bucket_histogram).

const (
	otlpDefaultEndpoint = "http://localhost:4318"
	otlpDefaultTimeout  = 10 * time.Second
	// otlpMaxResponse bounds what is read of a collector's answer.
	otlpMaxResponse = 64 << 10
	// otlpRetryFirst is the first wait before retrying a throttled or
	// unavailable collector; it doubles up to otlpRetryMax.
	otlpRetryFirst = 500 * time.Millisecond
	otlpRetryMax   = 5 * time.Second
)

// otlpHTTP posts one signal's OTLP/HTTP protobuf requests.
type otlpHTTP struct {
	signal  string // "traces", "metrics": for errors
	url     string
	headers map[string]string
	timeout time.Duration
	gzip    bool
	client  *http.Client
}

// otlpVar returns OTEL_EXPORTER_OTLP_<SIGNAL>_<name>, else
// OTEL_EXPORTER_OTLP_<name>, trimmed.
func otlpVar(getenv func(string) string, signal, name string) (key, value string) {
	key = "OTEL_EXPORTER_OTLP_" + signal + "_" + name
	if v := strings.TrimSpace(getenv(key)); v != "" {
		return key, v
	}
	key = "OTEL_EXPORTER_OTLP_" + name
	return key, strings.TrimSpace(getenv(key))
}

func unsupported(key, value, want string) error {
	return fmt.Errorf("%w: %s=%q (%s)", ErrUnsupported, key, value, want)
}

// newOTLPHTTP configures the exporter of signal (TRACES, METRICS) from the
// environment; path is the signal's path under a base endpoint.
func newOTLPHTTP(getenv func(string) string, signal, path string) (*otlpHTTP, error) {
	c := &otlpHTTP{signal: strings.ToLower(signal), timeout: otlpDefaultTimeout, headers: map[string]string{}}
	key := "OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"
	endpoint := strings.TrimSpace(getenv(key))
	if endpoint == "" {
		key = "OTEL_EXPORTER_OTLP_ENDPOINT"
		base := strings.TrimSpace(getenv(key))
		if base == "" {
			base = otlpDefaultEndpoint
		}
		endpoint = strings.TrimRight(base, "/") + path
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, unsupported(key, endpoint, "want an http:// or https:// URL")
	}
	if u.Path == "" {
		u.Path = "/"
	}
	c.url = u.String()

	if k, v := otlpVar(getenv, signal, "HEADERS"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			name, val, ok := strings.Cut(kv, "=")
			name = strings.TrimSpace(name)
			uval, err := url.PathUnescape(strings.TrimSpace(val))
			if !ok || name == "" || err != nil {
				return nil, fmt.Errorf("%w: %s: an entry is not name=value (URL-encoded)", ErrUnsupported, k)
			}
			c.headers[name] = uval
		}
	}
	if k, v := otlpVar(getenv, signal, "TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, unsupported(k, v, "want milliseconds")
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch k, v := otlpVar(getenv, signal, "COMPRESSION"); strings.ToLower(v) {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, unsupported(k, v, "want gzip or none")
	}
	tlsConf, err := otlpTLS(getenv, signal)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConf
	c.client = &http.Client{Transport: tr}
	return c, nil
}

// otlpTLS reads _CERTIFICATE (CA file) and _CLIENT_CERTIFICATE with
// _CLIENT_KEY; nil when none is set.
func otlpTLS(getenv func(string) string, signal string) (*tls.Config, error) {
	caKey, ca := otlpVar(getenv, signal, "CERTIFICATE")
	certKey, cert := otlpVar(getenv, signal, "CLIENT_CERTIFICATE")
	keyKey, key := otlpVar(getenv, signal, "CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("otelenv: %s: %w", caKey, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: %s: no PEM certificate in %s", ErrUnsupported, caKey, ca)
		}
		conf.RootCAs = pool
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, fmt.Errorf("%w: %s and %s go together", ErrUnsupported, certKey, keyKey)
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("otelenv: %s/%s: %w", certKey, keyKey, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// errOTLPStatus is a collector's refusal that retrying cannot fix.
var errOTLPStatus = errors.New("otelenv: the OTLP collector refused the export")

// post sends one request body, retrying while the collector is throttled
// or unavailable (429, 502, 503, 504, or no connection), within the
// timeout.
func (c *otlpHTTP) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if c.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return err
		}
		body = buf.Bytes()
	}
	wait := otlpRetryFirst
	for {
		retry, after, err := c.try(ctx, body)
		if err == nil || !retry {
			return err
		}
		if after <= 0 {
			after = wait
			wait = min(2*wait, otlpRetryMax)
		}
		t := time.NewTimer(after)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("otlp %s: %w (last: %w)", c.signal, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// try makes one attempt; retry says whether another may succeed, after
// how long the collector asked to wait (Retry-After), if it did.
func (c *otlpHTTP) try(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return ctx.Err() == nil, 0, fmt.Errorf("otlp %s: %w", c.signal, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, otlpMaxResponse))
	_ = resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return false, 0, nil
	}
	err = fmt.Errorf("otlp %s: %w: HTTP %s from %s", c.signal, errOTLPStatus, resp.Status, c.url)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, err
	}
	return false, 0, err
}

func (c *otlpHTTP) close() { c.client.CloseIdleConnections() }

// otlpSpanExporter is the OTLP/HTTP span exporter.
type otlpSpanExporter struct {
	c        *otlpHTTP
	mu       sync.Mutex
	stopped  bool
	inFlight sync.WaitGroup
}

func newOTLPSpanExporter(getenv func(string) string) (sdktrace.SpanExporter, error) {
	c, err := newOTLPHTTP(getenv, "TRACES", "/v1/traces")
	if err != nil {
		return nil, err
	}
	return &otlpSpanExporter{c: c}, nil
}

func (e *otlpSpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil
	}
	e.inFlight.Add(1)
	e.mu.Unlock()
	defer e.inFlight.Done()
	return e.c.post(ctx, encodeTraces(spans))
}

func (e *otlpSpanExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.inFlight.Wait()
	e.c.close()
	return nil
}

// otlpMetricExporter is the OTLP/HTTP metric exporter.
type otlpMetricExporter struct {
	c           *otlpHTTP
	temporality sdkmetric.TemporalitySelector
	aggregation sdkmetric.AggregationSelector
}

func newOTLPMetricExporter(getenv func(string) string) (sdkmetric.Exporter, error) {
	c, err := newOTLPHTTP(getenv, "METRICS", "/v1/metrics")
	if err != nil {
		return nil, err
	}
	e := &otlpMetricExporter{c: c, temporality: sdkmetric.DefaultTemporalitySelector, aggregation: sdkmetric.DefaultAggregationSelector}
	const tempKey = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"
	switch v := strings.ToLower(strings.TrimSpace(getenv(tempKey))); v {
	case "", "cumulative":
	case "delta", "lowmemory":
		e.temporality = func(k sdkmetric.InstrumentKind) metricdata.Temporality {
			switch k {
			case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindHistogram:
				return metricdata.DeltaTemporality
			case sdkmetric.InstrumentKindObservableCounter:
				if v == "delta" {
					return metricdata.DeltaTemporality
				}
			}
			return metricdata.CumulativeTemporality
		}
	default:
		return nil, unsupported(tempKey, v, "want cumulative, delta or lowmemory")
	}
	const histKey = "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION"
	switch v := strings.ToLower(strings.TrimSpace(getenv(histKey))); v {
	case "", "explicit_bucket_histogram":
	case "base2_exponential_bucket_histogram":
		e.aggregation = func(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
			if k == sdkmetric.InstrumentKindHistogram {
				return sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}
			}
			return sdkmetric.DefaultAggregationSelector(k)
		}
	default:
		return nil, unsupported(histKey, v, "want explicit_bucket_histogram or base2_exponential_bucket_histogram")
	}
	return e, nil
}

func (e *otlpMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return e.temporality(k)
}

func (e *otlpMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return e.aggregation(k)
}

func (e *otlpMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	return e.c.post(ctx, encodeMetrics(rm))
}

func (e *otlpMetricExporter) ForceFlush(ctx context.Context) error { return ctx.Err() }

func (e *otlpMetricExporter) Shutdown(ctx context.Context) error {
	e.c.close()
	return ctx.Err()
}
