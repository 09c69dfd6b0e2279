package otelenv

import (
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP protobuf messages (opentelemetry-proto v1: collector, trace,
// metrics, common, resource) encoded directly with protowire, so that the
// default build needs neither the generated OTLP packages nor, through
// them, gRPC. Field numbers are those of the .proto files.

// pb is a protobuf message being encoded.
type pb []byte

func (b pb) bytes(num protowire.Number, v []byte) pb {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// str appends a string field unless it is empty (proto3 default).
func (b pb) str(num protowire.Number, s string) pb {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// msg appends a nested message, even an empty one (presence matters for
// oneof members and repeated elements).
func (b pb) msg(num protowire.Number, m pb) pb { return b.bytes(num, m) }

func (b pb) varint(num protowire.Number, v uint64) pb {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func (b pb) fixed64(num protowire.Number, v uint64) pb {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

func (b pb) fixed32(num protowire.Number, v uint32) pb {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

// double appends a double field, also when it is 0 (for optional and
// oneof fields, whose presence matters).
func (b pb) double(num protowire.Number, v float64) pb {
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

// anyValue encodes an AnyValue.
func anyValue(v attribute.Value) pb {
	var b pb
	switch v.Type() {
	case attribute.BOOL:
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = b.double(4, v.AsFloat64())
	case attribute.STRING:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, v.AsString())
	case attribute.BYTESLICE:
		b = b.bytes(7, v.AsByteSlice())
	case attribute.BOOLSLICE, attribute.INT64SLICE, attribute.FLOAT64SLICE, attribute.STRINGSLICE, attribute.SLICE:
		var arr pb
		for _, e := range sliceValues(v) {
			arr = arr.msg(1, anyValue(e))
		}
		b = b.msg(5, arr)
	case attribute.MAP:
		var kvs pb
		for _, kv := range v.AsMap() {
			kvs = kvs.msg(1, keyValue(kv))
		}
		b = b.msg(6, kvs)
	}
	return b
}

func sliceValues(v attribute.Value) []attribute.Value {
	var out []attribute.Value
	switch v.Type() {
	case attribute.BOOLSLICE:
		for _, e := range v.AsBoolSlice() {
			out = append(out, attribute.BoolValue(e))
		}
	case attribute.INT64SLICE:
		for _, e := range v.AsInt64Slice() {
			out = append(out, attribute.Int64Value(e))
		}
	case attribute.FLOAT64SLICE:
		for _, e := range v.AsFloat64Slice() {
			out = append(out, attribute.Float64Value(e))
		}
	case attribute.STRINGSLICE:
		for _, e := range v.AsStringSlice() {
			out = append(out, attribute.StringValue(e))
		}
	case attribute.SLICE:
		out = v.AsSlice()
	}
	return out
}

func keyValue(kv attribute.KeyValue) pb {
	return pb(nil).str(1, string(kv.Key)).msg(2, anyValue(kv.Value))
}

func (b pb) attrs(num protowire.Number, kvs []attribute.KeyValue) pb {
	for _, kv := range kvs {
		b = b.msg(num, keyValue(kv))
	}
	return b
}

func resourceMsg(r *resource.Resource) pb {
	var b pb
	if r != nil {
		b = b.attrs(1, r.Attributes())
	}
	return b
}

func scopeMsg(s instrumentation.Scope) pb {
	return pb(nil).str(1, s.Name).str(2, s.Version).attrs(3, s.Attributes.ToSlice())
}

// spanKey groups spans by resource and scope, as OTLP nests them.
type spanKey struct {
	res                               attribute.Distinct
	scopeName, scopeVersion, scopeURL string
	scopeAttrs                        attribute.Distinct
}

// encodeTraces encodes an ExportTraceServiceRequest.
func encodeTraces(spans []sdktrace.ReadOnlySpan) []byte {
	type group struct {
		res   *resource.Resource
		scope instrumentation.Scope
		spans pb
	}
	var (
		order  []spanKey
		groups = map[spanKey]*group{}
	)
	for _, s := range spans {
		var resKey attribute.Distinct
		if r := s.Resource(); r != nil {
			resKey = r.Equivalent()
		}
		sc := s.InstrumentationScope()
		k := spanKey{res: resKey, scopeName: sc.Name, scopeVersion: sc.Version, scopeURL: sc.SchemaURL, scopeAttrs: sc.Attributes.Equivalent()}
		g := groups[k]
		if g == nil {
			g = &group{res: s.Resource(), scope: sc}
			groups[k] = g
			order = append(order, k)
		}
		g.spans = g.spans.msg(2, spanMsg(s))
	}
	// One ResourceSpans per resource, holding its scopes.
	var req pb
	done := map[attribute.Distinct]bool{}
	for _, k := range order {
		if done[k.res] {
			continue
		}
		done[k.res] = true
		var rs pb
		first := groups[k]
		rs = rs.msg(1, resourceMsg(first.res))
		for _, k2 := range order {
			if k2.res != k.res {
				continue
			}
			g := groups[k2]
			ss := pb(nil).msg(1, scopeMsg(g.scope))
			ss = append(ss, g.spans...)
			rs = rs.msg(2, ss.str(3, g.scope.SchemaURL))
		}
		if first.res != nil {
			rs = rs.str(3, first.res.SchemaURL())
		}
		req = req.msg(1, rs)
	}
	return req
}

// spanFlags are the W3C trace flags plus OTLP's is-remote bits.
func spanFlags(flags byte, remote bool) uint32 {
	f := uint32(flags) | 0x100 // SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
	if remote {
		f |= 0x200 // SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
	}
	return f
}

func spanMsg(s sdktrace.ReadOnlySpan) pb {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	var b pb
	b = b.bytes(1, tid[:]).bytes(2, sid[:]).str(3, sc.TraceState().String())
	parent := s.Parent()
	if parent.SpanID().IsValid() {
		psid := parent.SpanID()
		b = b.bytes(4, psid[:])
	}
	b = b.str(5, s.Name()).varint(6, uint64(s.SpanKind()))
	b = b.fixed64(7, unixNano(s.StartTime())).fixed64(8, unixNano(s.EndTime()))
	b = b.attrs(9, s.Attributes()).varint(10, uint64(s.DroppedAttributes()))
	for _, e := range s.Events() {
		ev := pb(nil).fixed64(1, unixNano(e.Time)).str(2, e.Name).attrs(3, e.Attributes).varint(4, uint64(e.DroppedAttributeCount))
		b = b.msg(11, ev)
	}
	b = b.varint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		lk := pb(nil).bytes(1, ltid[:]).bytes(2, lsid[:]).str(3, l.SpanContext.TraceState().String()).
			attrs(4, l.Attributes).varint(5, uint64(l.DroppedAttributeCount)).
			fixed32(6, spanFlags(byte(l.SpanContext.TraceFlags()), l.SpanContext.IsRemote()))
		b = b.msg(13, lk)
	}
	b = b.varint(14, uint64(s.DroppedLinks()))
	st := s.Status()
	var code uint64 // STATUS_CODE_UNSET
	switch st.Code {
	case codes.Ok:
		code = 1
	case codes.Error:
		code = 2
	}
	b = b.msg(15, pb(nil).str(2, st.Description).varint(3, code))
	return b.fixed32(16, spanFlags(byte(sc.TraceFlags()), parent.IsRemote()))
}

// encodeMetrics encodes an ExportMetricsServiceRequest.
func encodeMetrics(rm *metricdata.ResourceMetrics) []byte {
	rs := pb(nil).msg(1, resourceMsg(rm.Resource))
	for _, sm := range rm.ScopeMetrics {
		s := pb(nil).msg(1, scopeMsg(sm.Scope))
		for _, m := range sm.Metrics {
			if mm, ok := metricMsg(m); ok {
				s = s.msg(2, mm)
			}
		}
		rs = rs.msg(2, s.str(3, sm.Scope.SchemaURL))
	}
	if rm.Resource != nil {
		rs = rs.str(3, rm.Resource.SchemaURL())
	}
	return pb(nil).msg(1, rs)
}

func temporality(t metricdata.Temporality) uint64 {
	switch t {
	case metricdata.DeltaTemporality:
		return 1
	case metricdata.CumulativeTemporality:
		return 2
	}
	return 0
}

func metricMsg(m metricdata.Metrics) (pb, bool) {
	b := pb(nil).str(1, m.Name).str(2, m.Description).str(3, m.Unit)
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		return b.msg(5, numberPoints(nil, d.DataPoints)), true
	case metricdata.Gauge[float64]:
		return b.msg(5, numberPoints(nil, d.DataPoints)), true
	case metricdata.Sum[int64]:
		return b.msg(7, sumMsg(numberPoints(nil, d.DataPoints), d.Temporality, d.IsMonotonic)), true
	case metricdata.Sum[float64]:
		return b.msg(7, sumMsg(numberPoints(nil, d.DataPoints), d.Temporality, d.IsMonotonic)), true
	case metricdata.Histogram[int64]:
		return b.msg(9, histogramPoints(nil, d.DataPoints).varint(2, temporality(d.Temporality))), true
	case metricdata.Histogram[float64]:
		return b.msg(9, histogramPoints(nil, d.DataPoints).varint(2, temporality(d.Temporality))), true
	case metricdata.ExponentialHistogram[int64]:
		return b.msg(10, expHistogramPoints(nil, d.DataPoints).varint(2, temporality(d.Temporality))), true
	case metricdata.ExponentialHistogram[float64]:
		return b.msg(10, expHistogramPoints(nil, d.DataPoints).varint(2, temporality(d.Temporality))), true
	}
	return nil, false
}

func sumMsg(points pb, t metricdata.Temporality, monotonic bool) pb {
	b := append(points, pb(nil).varint(2, temporality(t))...)
	if monotonic {
		b = b.varint(3, 1)
	}
	return b
}

// number appends a value as as_int (field 6 in both NumberDataPoint and
// Exemplar) or as_double (asDouble: 4 in NumberDataPoint, 3 in Exemplar).
func number[N int64 | float64](b pb, v N, asDouble protowire.Number) pb {
	switch v := any(v).(type) {
	case int64:
		b = protowire.AppendTag(b, 6, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, uint64(v))
	case float64:
		return b.double(asDouble, v)
	}
	return b
}

func exemplars[N int64 | float64](b pb, num protowire.Number, es []metricdata.Exemplar[N]) pb {
	for _, e := range es {
		ex := pb(nil).attrs(7, e.FilteredAttributes).fixed64(2, unixNano(e.Time))
		ex = number(ex, e.Value, 3)
		if len(e.SpanID) > 0 {
			ex = ex.bytes(4, e.SpanID)
		}
		if len(e.TraceID) > 0 {
			ex = ex.bytes(5, e.TraceID)
		}
		b = b.msg(num, ex)
	}
	return b
}

func numberPoints[N int64 | float64](b pb, dps []metricdata.DataPoint[N]) pb {
	for _, dp := range dps {
		p := pb(nil).attrs(7, dp.Attributes.ToSlice()).fixed64(2, unixNano(dp.StartTime)).fixed64(3, unixNano(dp.Time))
		p = number(p, dp.Value, 4)
		b = b.msg(1, exemplars(p, 5, dp.Exemplars))
	}
	return b
}

func histogramPoints[N int64 | float64](b pb, dps []metricdata.HistogramDataPoint[N]) pb {
	for _, dp := range dps {
		p := pb(nil).attrs(9, dp.Attributes.ToSlice()).fixed64(2, unixNano(dp.StartTime)).fixed64(3, unixNano(dp.Time))
		p = p.fixed64(4, dp.Count).double(5, float64(dp.Sum))
		if len(dp.BucketCounts) > 0 {
			var packed []byte
			for _, c := range dp.BucketCounts {
				packed = protowire.AppendFixed64(packed, c)
			}
			p = p.bytes(6, packed)
		}
		if len(dp.Bounds) > 0 {
			var packed []byte
			for _, f := range dp.Bounds {
				packed = protowire.AppendFixed64(packed, math.Float64bits(f))
			}
			p = p.bytes(7, packed)
		}
		p = exemplars(p, 8, dp.Exemplars)
		if v, ok := dp.Min.Value(); ok {
			p = p.double(11, float64(v))
		}
		if v, ok := dp.Max.Value(); ok {
			p = p.double(12, float64(v))
		}
		b = b.msg(1, p)
	}
	return b
}

func expBuckets(bk metricdata.ExponentialBucket) pb {
	b := pb(nil)
	if bk.Offset != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(bk.Offset)))
	}
	if len(bk.Counts) > 0 {
		var packed []byte
		for _, c := range bk.Counts {
			packed = protowire.AppendVarint(packed, c)
		}
		b = b.bytes(2, packed)
	}
	return b
}

func expHistogramPoints[N int64 | float64](b pb, dps []metricdata.ExponentialHistogramDataPoint[N]) pb {
	for _, dp := range dps {
		p := pb(nil).attrs(1, dp.Attributes.ToSlice()).fixed64(2, unixNano(dp.StartTime)).fixed64(3, unixNano(dp.Time))
		p = p.fixed64(4, dp.Count).double(5, float64(dp.Sum))
		if dp.Scale != 0 {
			p = protowire.AppendTag(p, 6, protowire.VarintType)
			p = protowire.AppendVarint(p, protowire.EncodeZigZag(int64(dp.Scale)))
		}
		p = p.fixed64(7, dp.ZeroCount)
		p = p.msg(8, expBuckets(dp.PositiveBucket)).msg(9, expBuckets(dp.NegativeBucket))
		p = exemplars(p, 11, dp.Exemplars)
		if v, ok := dp.Min.Value(); ok {
			p = p.double(12, float64(v))
		}
		if v, ok := dp.Max.Value(); ok {
			p = p.double(13, float64(v))
		}
		if dp.ZeroThreshold != 0 {
			p = p.double(14, dp.ZeroThreshold)
		}
		b = b.msg(1, p)
	}
	return b
}
