package otel

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gopmcp/pmcp"
)

// DefaultMaxMetricTargets is the default of Options.MaxMetricTargets.
const DefaultMaxMetricTargets = 100

// TargetOther is the value the duration histograms record, in place of
// the tool name, prompt name, resource URI or notification method, for a
// name the server has not registered (or a method it does not know) and
// for every name beyond Options.MaxMetricTargets: names peers choose
// never become series of their own.
const TargetOther = "_OTHER"

// maxSpanTargetBytes bounds the tool name, prompt name or resource URI in
// a span's name and attributes: spans are not series, but a peer may send
// a name of any length.
const maxSpanTargetBytes = 256

// targetSet is the bounded set of target values a middleware's histograms
// have recorded. It is consulted when an operation's entry is built (a
// cache miss), never per request.
type targetSet struct {
	max int // <= 0: every target is TargetOther
	mu  sync.Mutex
	m   map[string]struct{}
}

func newTargetSet(max int) *targetSet {
	if max == 0 {
		max = DefaultMaxMetricTargets
	}
	return &targetSet{max: max, m: map[string]struct{}{}}
}

// admit returns v when it is in the set or the set has room for it (v is
// added), TargetOther otherwise.
func (s *targetSet) admit(v string) string {
	if s.max <= 0 {
		return TargetOther
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[v]; ok {
		return v
	}
	if len(s.m) >= s.max {
		return TargetOther
	}
	v = strings.Clone(v)
	s.m[v] = struct{}{}
	return v
}

// boundTarget cuts a target longer than maxSpanTargetBytes at a rune
// boundary.
func boundTarget(s string) string {
	if len(s) <= maxSpanTargetBytes {
		return s
	}
	cut := maxSpanTargetBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// knownNotifications are the notification methods of the protocol; any
// other method a peer sends is recorded as TargetOther.
var knownNotifications = map[string]bool{
	pmcp.NotificationInitialized: true, pmcp.NotificationCancelled: true, pmcp.NotificationProgress: true,
	pmcp.NotificationMessage: true, pmcp.NotificationToolsListChanged: true, pmcp.NotificationPromptsListChanged: true,
	pmcp.NotificationResourcesListChanged: true, pmcp.NotificationResourceUpdated: true,
	pmcp.NotificationRootsListChanged: true, pmcp.NotificationSubscriptionsAck: true,
	pmcp.NotificationElicitationComplete: true, pmcp.NotificationTasksStatus: true, pmcp.NotificationTasks: true,
}
