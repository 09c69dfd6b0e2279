package pmcp

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gopmcp/pmcp/jsonrpc"
)

// ErrNoCommonVersion is returned by Connect when the server supports no
// protocol version this client speaks.
var ErrNoCommonVersion = errors.New("pmcp: no protocol version supported by both client and server")

// maxSupportedVersions bounds how many entries of a server's
// supported-versions list the client looks at.
const maxSupportedVersions = 64

// negotiate runs the era negotiation of a stream transport and stores its
// outcome.
func (s *ClientSession) negotiate(ctx context.Context) error {
	forced := s.c.opts.Era
	if forced == EraUnknown {
		forced = s.eraHint
	}
	if forced == EraLegacy {
		return s.initialize(ctx, latestLegacyVersion)
	}
	version := s.c.modern[0]
	// First the probe, bounded by the probe timeout; a renegotiated
	// discover (after -32022) talks to a known-modern server and gets the
	// ordinary call timeout.
	pctx, cancel := context.WithTimeout(ctx, s.c.probeTimeout())
	res, err := s.discover(pctx, version)
	cancel()
	if err == nil {
		if len(res.SupportedVersions) > 0 {
			return s.adoptDiscover(ctx, version, res, forced)
		}
		// A result without supportedVersions is no DiscoverResult: a
		// legacy server answering unknown methods with an empty result.
		err = errNotDiscoverResult
	}
	var re *jsonrpc.Error
	if errors.As(err, &re) && re.Code == jsonrpc.CodeUnsupportedProtocolVersion {
		supported := supportedVersionsOf(re.Data)
		// Retry once with the best version both speak, even when it is the
		// one just offered: the rejection may have been transient.
		if v := pickVersion(supported, s.c.modern); v != "" {
			res, err := s.discover(ctx, v)
			if err != nil {
				return fmt.Errorf("pmcp: renegotiated at %s: %w", v, err)
			}
			return s.adoptDiscover(ctx, v, res, forced)
		}
		if v := pickVersion(supported, legacyVersions); v != "" && forced != EraModern {
			return s.initialize(ctx, v)
		}
		return fmt.Errorf("%w: the server supports %s", ErrNoCommonVersion, capPeerString(fmt.Sprint(supported)))
	}
	switch {
	case forced == EraModern:
		return err
	case ctx.Err() != nil:
		return fmt.Errorf("pmcp: connect: %w", context.Cause(ctx))
	case errors.Is(err, jsonrpc.ErrClosed), isTransportFailure(err), isAuthFailure(err):
		return err
	case errors.As(err, &re) && isModernErrorCode(re.Code):
		// A recognised modern error: the server is modern but refused the
		// probe. Falling back to initialize would not help.
		return fmt.Errorf("pmcp: the server speaks the modern protocol but refused server/discover: %w", err)
	}
	// Any other error, or no answer within the probe timeout: a legacy
	// server. The rule is deliberately not tied to one error code.
	if ierr := s.initialize(ctx, latestLegacyVersion); ierr != nil {
		return fmt.Errorf("%w (after the server/discover probe failed: %v)", ierr, err)
	}
	return nil
}

// errNotDiscoverResult: server/discover was answered with a result that
// lacks supportedVersions.
var errNotDiscoverResult = errors.New("pmcp: server/discover answered without supportedVersions")

// isModernErrorCode reports whether code is one only modern servers send
// (HeaderMismatch, MissingRequiredClientCapability).
func isModernErrorCode(code int64) bool {
	return code == jsonrpc.CodeHeaderMismatch || code == jsonrpc.CodeMissingRequiredClientCapability
}

// discover sends server/discover at version and decodes the result.
func (s *ClientSession) discover(ctx context.Context, version string) (*discoverResult, error) {
	meta, err := s.c.modernMeta(version)
	if err != nil {
		return nil, err
	}
	m, err := encodeMeta(meta, nil, nil)
	if err != nil {
		return nil, err
	}
	raw, err := s.call(ctx, MethodDiscover, &requestParamsBase{Meta: m})
	if err != nil {
		return nil, err
	}
	var res discoverResult
	if err := decodeResult(MethodDiscover, raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// adoptDiscover stores a modern negotiation. A server whose discover
// result lists no modern version we speak, only legacy ones (a stateful
// server that answers discover but serves sessions only), gets the legacy
// handshake instead, unless the modern era is forced.
func (s *ClientSession) adoptDiscover(ctx context.Context, requested string, res *discoverResult, forced Era) error {
	version := requested
	if !slices.Contains(res.SupportedVersions, requested) {
		version = pickVersion(res.SupportedVersions, s.c.modern)
	}
	if version == "" {
		supported := res.SupportedVersions[:min(len(res.SupportedVersions), maxSupportedVersions)]
		if v := pickVersion(supported, legacyVersions); v != "" && forced != EraModern {
			return s.initialize(ctx, v)
		}
		return fmt.Errorf("%w: server/discover lists %s", ErrNoCommonVersion, capPeerString(fmt.Sprint(supported)))
	}
	meta, err := s.c.modernMeta(version)
	if err != nil {
		return err
	}
	metaJSON, err := encodeMeta(meta, nil, nil)
	if err != nil {
		return err
	}
	n := &negotiated{
		era:          EraModern,
		version:      version,
		serverInfo:   serverInfoFromMeta(res.Meta),
		caps:         res.Capabilities,
		instructions: res.Instructions,
		meta:         meta,
		// Clipped: whoever appends to a request's _meta copies it.
		metaJSON: metaJSON[:len(metaJSON):len(metaJSON)],
	}
	s.neg.Store(n)
	return nil
}

// initialize runs the legacy handshake offering version.
func (s *ClientSession) initialize(ctx context.Context, version string) error {
	raw, err := s.call(ctx, MethodInitialize, &initializeParams{
		ProtocolVersion: version,
		Capabilities:    *s.c.capabilities(EraLegacy),
		ClientInfo:      s.c.info,
	})
	if err != nil {
		return err
	}
	var res InitializeResult
	if err := decodeResult(MethodInitialize, raw, &res); err != nil {
		return err
	}
	if EraOf(res.ProtocolVersion) != EraLegacy {
		return fmt.Errorf("%w: the server answered initialize with version %q", ErrNoCommonVersion, capPeerString(res.ProtocolVersion))
	}
	info := res.ServerInfo
	s.neg.Store(&negotiated{
		era:          EraLegacy,
		version:      res.ProtocolVersion,
		serverInfo:   &info,
		caps:         res.Capabilities,
		instructions: res.Instructions,
	})
	if err := s.notify(ctx, NotificationInitialized, nil); err != nil {
		return fmt.Errorf("pmcp: notifications/initialized: %w", err)
	}
	if lvl := s.c.logLevel; lvl != LevelOff && res.Capabilities.Logging != nil {
		if err := s.SetLoggingLevel(ctx, lvl); err != nil {
			s.c.log.Warn("pmcp: client: logging/setLevel after initialize failed", "error", err)
		}
	}
	return nil
}

// modernMeta encodes the static members of the modern request _meta for
// version.
func (c *Client) modernMeta(version string) (map[string]jsontext.Value, error) {
	caps, err := Marshal(c.capabilities(EraModern))
	if err != nil {
		return nil, fmt.Errorf("pmcp: encode client capabilities: %w", err)
	}
	info, err := Marshal(&c.info)
	if err != nil {
		return nil, fmt.Errorf("pmcp: encode client info: %w", err)
	}
	v, _ := jsontext.AppendQuote(nil, version)
	m := map[string]jsontext.Value{
		MetaProtocolVersion:    v,
		MetaClientCapabilities: caps,
		MetaClientInfo:         info,
	}
	if lvl := c.logLevel; lvl != LevelOff {
		l, _ := jsontext.AppendQuote(nil, lvl.String())
		m[MetaLogLevel] = l
	}
	return m, nil
}

// supportedVersionsOf reads data.supported of an UnsupportedProtocolVersion
// error, bounded.
func supportedVersionsOf(data jsontext.Value) []string {
	var d struct {
		Supported []jsontext.Value `json:"supported"`
	}
	if len(data) == 0 || Unmarshal(data, &d) != nil {
		return nil
	}
	out := make([]string, 0, min(len(d.Supported), maxSupportedVersions))
	for _, raw := range d.Supported {
		if len(out) == maxSupportedVersions {
			break
		}
		var v string
		if Unmarshal(raw, &v) == nil && len(v) <= 64 {
			out = append(out, v)
		}
	}
	return out
}

// pickVersion returns the first of ours (in our order of preference) that
// the server lists, or "".
func pickVersion(theirs, ours []string) string {
	for _, v := range ours {
		if slices.Contains(theirs, v) {
			return v
		}
	}
	return ""
}

// serverInfoFromMeta extracts io.modelcontextprotocol/serverInfo.
func serverInfoFromMeta(m Meta) *Implementation {
	v, ok := m[MetaServerInfo]
	if !ok {
		return nil
	}
	b, err := Marshal(v)
	if err != nil {
		return nil
	}
	var info Implementation
	if Unmarshal(b, &info) != nil {
		return nil
	}
	return &info
}
