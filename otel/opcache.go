package otel

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gopmcp/pmcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// DefaultOperationCacheSize is the default of Options.OperationCacheSize:
// how many distinct operations (method, target, protocol version,
// transport) a middleware keeps precomputed span names and attribute
// sets for.
const DefaultOperationCacheSize = 256

// maxOutcomesPerOperation bounds the failure outcomes (error.type and
// rpc.response.status_code pairs) of an operation; the histograms record
// any further ones with the codes "_OTHER" (a peer, for example a
// bridged server, chooses its error codes). Success and tool_error never
// count against it.
const maxOutcomesPerOperation = 8

// opKey identifies an operation: everything its span name and its
// histogram attributes depend on, nothing per request.
type opKey struct {
	method, name, version        string
	network, proto, protoVersion string
	// remote is the server's host:port of a client operation (its
	// server.address and server.port); "" on the server side.
	remote string
	// nameOther: name is not registered on the server; methodOther:
	// method is not one of the protocol's. The histograms record
	// TargetOther for them (spans keep them).
	nameOther, methodOther bool
}

// outcomeKey is the part of an outcome the histogram records.
type outcomeKey struct{ errorType, statusCode string }

// opEntry is what an operation's spans and histogram points share,
// computed once. Everything in it is read-only once published, except
// outcomes (copy on write).
type opEntry struct {
	spanName string
	// attrs are the operation attributes (method, target, protocol
	// version, network.*): the start of every span's attributes.
	attrs []attribute.KeyValue
	// mattrs are attrs as the histograms record them, on success: the
	// target (and a notification's method) bounded by the targetSet.
	mattrs []attribute.KeyValue
	// ok and toolError are the histogram options of a success and of a
	// tool result with isError set.
	ok, toolError []metric.RecordOption
	mu            sync.Mutex
	outcomes      atomic.Pointer[map[outcomeKey][]metric.RecordOption]
}

func newOpEntry(k opKey, targets *targetSet) *opEntry {
	name := strings.Clone(boundTarget(k.name)) // spans outlive the request
	e := &opEntry{spanName: spanName(k.method, name)}
	ti := pmcp.TransportInfo{Network: k.network, Protocol: k.proto, ProtocolVersion: k.protoVersion}
	e.attrs = operationAttrs(make([]attribute.KeyValue, 0, 9), k.method, name, k.version, ti)
	e.attrs = appendHostPort(e.attrs, KeyServerAddress, KeyServerPort, k.remote)
	e.attrs = e.attrs[:len(e.attrs):len(e.attrs)] // appends copy
	method, target := k.method, k.name
	if k.methodOther {
		method = TargetOther
	}
	if target != "" {
		if k.nameOther {
			target = TargetOther
		} else {
			target = targets.admit(target)
		}
	}
	if method == k.method && target == k.name && name == k.name {
		e.mattrs = e.attrs
	} else {
		e.mattrs = operationAttrs(make([]attribute.KeyValue, 0, 9), method, target, k.version, ti)
		e.mattrs = appendHostPort(e.mattrs, KeyServerAddress, KeyServerPort, k.remote)
		e.mattrs = e.mattrs[:len(e.mattrs):len(e.mattrs)]
	}
	e.ok = recordOptions(e.mattrs)
	e.toolError = recordOptions(append(e.mattrs, KeyErrorType.String(ErrorTypeToolError)))
	return e
}

// recordOptions returns the histogram options that record with attrs.
func recordOptions(attrs []attribute.KeyValue) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
}

// record returns the histogram options of outcome o.
func (e *opEntry) record(o outcome) []metric.RecordOption {
	switch {
	case o.errorType == "" && o.statusCode == "":
		return e.ok
	case o.errorType == ErrorTypeToolError && o.statusCode == "":
		return e.toolError
	}
	k := outcomeKey{o.errorType, o.statusCode}
	if m := e.outcomes.Load(); m != nil {
		if opts, ok := (*m)[k]; ok {
			return opts
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.outcomes.Load()
	if old != nil && len(*old) >= maxOutcomesPerOperation {
		// An unusual set of failures (codes a peer may choose): the
		// rest share one series.
		// rest share a series: one for failures, one for caller faults
		// (which have no error.type).
		k = outcomeKey{statusCode: ErrorTypeOther}
		if o.errorType != "" {
			k.errorType = ErrorTypeOther
		}
		if opts, ok := (*old)[k]; ok {
			return opts
		}
		o = outcome{errorType: k.errorType, statusCode: k.statusCode}
	}
	opts := recordOptions(o.attrs(append([]attribute.KeyValue(nil), e.mattrs...)))
	m := make(map[outcomeKey][]metric.RecordOption, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[k] = opts
	e.outcomes.Store(&m)
	return opts
}

// opCache maps operations to their entries. Reads take no lock (the map
// is replaced, never changed, once published); it holds at most max
// entries and starts over when full, so a peer sending ever new tool
// names or resource URIs costs memory bounded by max and the next
// operations are cached again.
type opCache struct {
	max     int // <= 0: nothing is cached
	mu      sync.Mutex
	m       atomic.Pointer[map[opKey]*opEntry]
	targets *targetSet
}

func newOpCache(size, maxTargets int) *opCache {
	if size == 0 {
		size = DefaultOperationCacheSize
	}
	return &opCache{max: size, targets: newTargetSet(maxTargets)}
}

// get returns the entry of k, computing it on a miss.
func (c *opCache) get(k opKey) *opEntry {
	if m := c.m.Load(); m != nil {
		if e, ok := (*m)[k]; ok {
			return e
		}
	}
	if c.max <= 0 {
		return newOpEntry(k, c.targets)
	}
	// The key's strings may point into a request's buffers: the cache
	// keeps its own copies.
	k.method, k.name, k.version = strings.Clone(k.method), strings.Clone(k.name), strings.Clone(k.version)
	k.network, k.proto, k.protoVersion, k.remote = strings.Clone(k.network), strings.Clone(k.proto), strings.Clone(k.protoVersion), strings.Clone(k.remote)
	e := newOpEntry(k, c.targets)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if e0, ok := (*old)[k]; ok {
			return e0
		}
	}
	var m map[opKey]*opEntry
	if old == nil || len(*old) >= c.max {
		m = map[opKey]*opEntry{k: e}
	} else {
		m = make(map[opKey]*opEntry, len(*old)+1)
		for k0, e0 := range *old {
			m[k0] = e0
		}
		m[k] = e
	}
	c.m.Store(&m)
	return e
}

func lenOf[K comparable, V any](m *map[K]V) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// serverOpKey is the operation of a request or notification.
func serverOpKey(method, name, version string, ti pmcp.TransportInfo) opKey {
	return opKey{method: method, name: name, version: version, network: ti.Network, proto: ti.Protocol, protoVersion: ti.ProtocolVersion}
}

// clientOpKey is the operation of an outgoing request.
func clientOpKey(method, name, version string, ti pmcp.TransportInfo) opKey {
	k := serverOpKey(method, name, version, ti)
	k.remote = ti.RemoteAddr
	return k
}
