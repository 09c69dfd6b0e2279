package pmcp

import "slices"

// Protocol versions this SDK speaks.
const (
	// Version20260728 is the modern, stateless revision: no handshake,
	// per-request _meta, server/discover, multi-round-trip requests.
	Version20260728 = "2026-07-28"
	// Version20251125 is the newest legacy revision (initialize handshake,
	// sessions, server-to-client requests).
	Version20251125 = "2025-11-25"
	// Older legacy revisions, still accepted at initialize (SupportedVersions
	// lists them).
	version20250618 = "2025-06-18"
	version20250326 = "2025-03-26"
	version20241105 = "2024-11-05"

	// latestLegacyVersion is what a legacy client is offered when it asks
	// for a version this server does not know, and what the client asks
	// for at initialize.
	latestLegacyVersion = Version20251125
)

// SupportedVersions lists every version a dual-era server accepts, newest
// first. It is what server/discover reports and what -32022 carries.
func SupportedVersions() []string {
	return []string{Version20260728, Version20251125, version20250618, version20250326, version20241105}
}

var legacyVersions = []string{Version20251125, version20250618, version20250326, version20241105}
var modernVersions = []string{Version20260728}

// Era is the protocol generation a request is served under. It is a
// behavioural switch derived from the negotiated version, never an identity
// or authorization signal.
type Era uint8

const (
	// EraUnknown is the zero Era: no protocol context was resolved.
	EraUnknown Era = iota
	// EraLegacy is 2025-11-25 and earlier: initialize handshake, sessions,
	// real server-to-client requests.
	EraLegacy
	// EraModern is 2026-07-28 and later: stateless, per-request _meta,
	// multi-round-trip requests instead of server-to-client requests.
	EraModern
)

func (e Era) String() string {
	switch e {
	case EraLegacy:
		return "legacy"
	case EraModern:
		return "modern"
	}
	return "unknown"
}

// EraOf maps a protocol version to its era: EraLegacy for a handshake-era
// version this SDK accepts, EraModern for a stateless-era one, EraUnknown
// for any other string.
func EraOf(version string) Era {
	switch {
	case slices.Contains(modernVersions, version):
		return EraModern
	case slices.Contains(legacyVersions, version):
		return EraLegacy
	}
	return EraUnknown
}

// Reserved _meta keys.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	// MetaRelatedTask tags 2025-11-25 messages that belong to a task.
	MetaRelatedTask   = "io.modelcontextprotocol/related-task"
	MetaProgressToken = "progressToken"
)

// Method names.
const (
	MethodInitialize             = "initialize"
	MethodPing                   = "ping"
	MethodDiscover               = "server/discover"
	MethodToolsList              = "tools/list"
	MethodToolsCall              = "tools/call"
	MethodResourcesList          = "resources/list"
	MethodResourcesTemplatesList = "resources/templates/list"
	MethodResourcesRead          = "resources/read"
	MethodResourcesSubscribe     = "resources/subscribe"
	MethodResourcesUnsubscribe   = "resources/unsubscribe"
	MethodPromptsList            = "prompts/list"
	MethodPromptsGet             = "prompts/get"
	MethodCompletionComplete     = "completion/complete"
	MethodLoggingSetLevel        = "logging/setLevel"
	MethodSubscriptionsListen    = "subscriptions/listen"
	MethodSamplingCreateMessage  = "sampling/createMessage"
	MethodElicitationCreate      = "elicitation/create"
	MethodRootsList              = "roots/list"

	NotificationInitialized          = "notifications/initialized"
	NotificationCancelled            = "notifications/cancelled"
	NotificationProgress             = "notifications/progress"
	NotificationMessage              = "notifications/message"
	NotificationToolsListChanged     = "notifications/tools/list_changed"
	NotificationPromptsListChanged   = "notifications/prompts/list_changed"
	NotificationResourcesListChanged = "notifications/resources/list_changed"
	NotificationResourceUpdated      = "notifications/resources/updated"
	NotificationRootsListChanged     = "notifications/roots/list_changed"
	NotificationSubscriptionsAck     = "notifications/subscriptions/acknowledged"
	// NotificationElicitationComplete exists in 2025-11-25 only.
	NotificationElicitationComplete = "notifications/elicitation/complete"
)
