package otel

import (
	"context"

	"github.com/gopmcp/pmcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Names of the operator metrics of ObserveServer.
const (
	// MetricHTTPSessions is the number of live legacy sessions of a
	// Streamable HTTP handler.
	MetricHTTPSessions = "pmcp.http.sessions"
	// MetricHTTPListenStreams is the number of open subscriptions/listen
	// streams of a Streamable HTTP handler.
	MetricHTTPListenStreams = "pmcp.http.listen_streams"
	// MetricHTTPRefusals counts the requests a Streamable HTTP handler
	// refused with an HTTP error status, by KeyRefusalReason.
	MetricHTTPRefusals = "pmcp.http.refusals"
	// MetricTasksRunning is the number of task handlers running in the
	// process.
	MetricTasksRunning = "pmcp.tasks.running"
	// KeyRefusalReason is the one attribute of MetricHTTPRefusals: a key
	// of pmcp.StreamableHTTPStats.Refusals (a fixed set: "host",
	// "session_not_found", "max_sessions", …).
	KeyRefusalReason attribute.Key = "reason"
)

// ObserveServer reports, through observable instruments of
// opts.MeterProvider, the counts srv and h keep: MetricTasksRunning from
// srv.Stats, and MetricHTTPSessions, MetricHTTPListenStreams and
// MetricHTTPRefusals from h.Stats. h may be nil (a server on stdio); then
// only the task gauge is registered. The values are read when the
// metrics are collected; nothing is added to the request path. No
// attribute carries a value a client chose: the refusal reasons are the
// handler's fixed set.
//
// Unregister the result when srv or h is no longer served (shutting the
// meter provider down also ends it).
func ObserveServer(opts Options, srv *pmcp.Server, h *pmcp.StreamableHTTPHandler) (metric.Registration, error) {
	m := opts.resolve().meter
	tasks, err := m.Int64ObservableUpDownCounter(MetricTasksRunning, metric.WithUnit("{task}"),
		metric.WithDescription("Task handlers running in this process."))
	if err != nil {
		return nil, err
	}
	instruments := []metric.Observable{tasks}
	var sessions, listens metric.Int64ObservableUpDownCounter
	var refusals metric.Int64ObservableCounter
	if h != nil {
		if sessions, err = m.Int64ObservableUpDownCounter(MetricHTTPSessions, metric.WithUnit("{session}"),
			metric.WithDescription("Live legacy (2025-11-25) sessions of the Streamable HTTP handler.")); err != nil {
			return nil, err
		}
		if listens, err = m.Int64ObservableUpDownCounter(MetricHTTPListenStreams, metric.WithUnit("{stream}"),
			metric.WithDescription("Open subscriptions/listen streams of the Streamable HTTP handler.")); err != nil {
			return nil, err
		}
		if refusals, err = m.Int64ObservableCounter(MetricHTTPRefusals, metric.WithUnit("{request}"),
			metric.WithDescription("Requests the Streamable HTTP handler refused with an HTTP error status, by reason.")); err != nil {
			return nil, err
		}
		instruments = append(instruments, sessions, listens, refusals)
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(tasks, int64(srv.Stats().RunningTasks))
		if h == nil {
			return nil
		}
		st := h.Stats()
		o.ObserveInt64(sessions, int64(st.Sessions))
		o.ObserveInt64(listens, st.ListenStreams)
		for reason, n := range st.Refusals {
			o.ObserveInt64(refusals, int64(n), metric.WithAttributes(KeyRefusalReason.String(reason)))
		}
		return nil
	}, instruments...)
}
