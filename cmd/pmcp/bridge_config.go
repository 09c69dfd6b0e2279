package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauthclient"
	"github.com/gopmcp/pmcp/proxy"
)

// bridgeVersion is the version the bridge announces up- and downstream.
const bridgeVersion = "0.1.0"

// maxBridgeConfigBytes bounds --config.
const maxBridgeConfigBytes = 1 << 20

// maxSubjectTokenBytes bounds a token exchange's subjectTokenFile.
const maxSubjectTokenBytes = 64 << 10

// bridgeConfig is the "mcpServers" file format hosts and gateways share.
type bridgeConfig struct {
	MCPServers map[string]bridgeServer `json:"mcpServers"`
}

type bridgeServer struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	// Headers are sent to a url upstream; ${NAME} in a value is the
	// environment variable NAME (see expandEnv).
	Headers map[string]string `json:"headers,omitempty"`
	// Type is accepted ("stdio", "http", "streamable-http") and otherwise
	// ignored: command or url decides.
	Type string `json:"type,omitempty"`
	// OAuth gives a url upstream the gateway's own OAuth credentials.
	OAuth *bridgeOAuth `json:"oauth,omitempty"`
	// Timeout bounds each call to the upstream (a Go duration, "30s"):
	// proxy.Upstream.CallTimeout.
	Timeout string `json:"timeout,omitempty"`
	// Breaker turns on the upstream's circuit breaker: proxy.Breaker.
	Breaker *bridgeBreaker `json:"breaker,omitempty"`
}

// bridgeOAuth holds one of the grants of oauthclient's token sources.
type bridgeOAuth struct {
	ClientCredentials *bridgeClientCredentials `json:"clientCredentials,omitempty"`
	TokenExchange     *bridgeTokenExchange     `json:"tokenExchange,omitempty"`
}

// bridgeClientCredentials is oauthclient.ClientCredentials; clientId and
// clientSecret take ${NAME}.
type bridgeClientCredentials struct {
	TokenURL     string      `json:"tokenUrl,omitempty"`
	Issuer       string      `json:"issuer,omitempty"`
	ClientID     string      `json:"clientId"`
	ClientSecret pmcp.Secret `json:"clientSecret,omitempty"`
	Scopes       []string    `json:"scopes,omitempty"`
	Resource     string      `json:"resource,omitempty"`
}

// bridgeTokenExchange is oauthclient.TokenExchange; the subject token is
// subjectToken (${NAME} taken) or the content of subjectTokenFile, read at
// each exchange (a rotated workload identity token).
type bridgeTokenExchange struct {
	TokenURL         string      `json:"tokenUrl,omitempty"`
	Issuer           string      `json:"issuer,omitempty"`
	ClientID         string      `json:"clientId,omitempty"`
	ClientSecret     pmcp.Secret `json:"clientSecret,omitempty"`
	SubjectToken     pmcp.Secret `json:"subjectToken,omitempty"`
	SubjectTokenFile string      `json:"subjectTokenFile,omitempty"`
	SubjectTokenType string      `json:"subjectTokenType,omitempty"`
	Audience         string      `json:"audience,omitempty"`
	Resource         string      `json:"resource,omitempty"`
	Scopes           []string    `json:"scopes,omitempty"`
}

// bridgeBreaker is proxy.Breaker.
type bridgeBreaker struct {
	Failures int    `json:"failures"`
	Cooldown string `json:"cooldown,omitempty"`
}

func (c *bridgeConfig) names() []string {
	var out []string
	for k := range c.MCPServers {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func readBridgeConfig(path string) (*bridgeConfig, error) {
	var c bridgeConfig
	if err := readConfigFile(path, &c, pmcp.Unmarshal); err != nil {
		return nil, err
	}
	return &c, c.check(path)
}

// readConfigFile decodes the file at path (at most maxBridgeConfigBytes)
// into v with decode.
func readConfigFile(path string, v any, decode func([]byte, any) error) error {
	b, err := readFileMax(path, maxBridgeConfigBytes)
	if err != nil {
		return err
	}
	if err := decode(b, v); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// check reports what makes c unusable, and expands ${NAME} where it is
// taken (bridgeServer.resolve).
func (c *bridgeConfig) check(path string) error {
	if len(c.MCPServers) == 0 {
		return fmt.Errorf("%s: no mcpServers", path)
	}
	for _, name := range c.names() {
		s := c.MCPServers[name]
		if err := s.resolve(os.LookupEnv); err != nil {
			return fmt.Errorf("%s: server %q: %v", path, name, err)
		}
		c.MCPServers[name] = s
	}
	return nil
}

// resolve checks the entry's fields and expands ${NAME} where it is
// taken, with lookup (os.LookupEnv).
func (s *bridgeServer) resolve(lookup func(string) (string, bool)) error {
	switch {
	case s.URL != "" && s.Command != "":
		return errors.New("has both url and command")
	case s.URL != "":
		if err := checkURL(s.URL); err != nil {
			return err
		}
	case s.Command != "":
		if len(s.Headers) > 0 || s.OAuth != nil {
			return errors.New("headers and oauth apply to a url upstream, not a command")
		}
	default:
		return errors.New("needs url or command")
	}
	for k, v := range s.Headers {
		x, err := expandEnv(v, lookup)
		if err != nil {
			return fmt.Errorf("headers[%q]: %v", k, err)
		}
		s.Headers[k] = x
	}
	if s.Timeout != "" {
		if d, err := time.ParseDuration(s.Timeout); err != nil || d <= 0 {
			return fmt.Errorf("timeout %q: want a positive duration such as \"30s\"", s.Timeout)
		}
	}
	if b := s.Breaker; b != nil {
		if b.Failures < 1 {
			return errors.New("breaker.failures: want at least 1")
		}
		if d, err := time.ParseDuration(b.Cooldown); b.Cooldown != "" && (err != nil || d <= 0) {
			return fmt.Errorf("breaker.cooldown %q: want a positive duration such as \"30s\"", b.Cooldown)
		}
	}
	if s.OAuth != nil {
		if err := s.OAuth.resolve(lookup, s.Headers); err != nil {
			return err
		}
		if _, err := s.OAuth.authorizer(); err != nil { // the URLs
			return fmt.Errorf("oauth: %v", err)
		}
	}
	return nil
}

func (o *bridgeOAuth) resolve(lookup func(string) (string, bool), headers map[string]string) error {
	for k := range headers {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			return errors.New("oauth and an Authorization header: give one")
		}
	}
	expand := func(field string, v *string) error {
		x, err := expandEnv(*v, lookup)
		if err != nil {
			return fmt.Errorf("oauth: %s: %v", field, err)
		}
		*v = x
		return nil
	}
	expandSecret := func(field string, v *pmcp.Secret) error {
		x := v.Reveal()
		err := expand(field, &x)
		*v = pmcp.Secret(x)
		return err
	}
	endpoint := func(tokenURL, issuer string) error {
		if (tokenURL == "") == (issuer == "") {
			return errors.New("give tokenUrl or issuer")
		}
		return nil
	}
	switch cc, te := o.ClientCredentials, o.TokenExchange; {
	case (cc == nil) == (te == nil):
		return errors.New("oauth: give clientCredentials or tokenExchange")
	case cc != nil:
		if err := endpoint(cc.TokenURL, cc.Issuer); err != nil {
			return fmt.Errorf("oauth.clientCredentials: %v", err)
		}
		if err := errors.Join(expand("clientCredentials.clientId", &cc.ClientID), expandSecret("clientCredentials.clientSecret", &cc.ClientSecret)); err != nil {
			return err
		}
		if cc.ClientID == "" {
			return errors.New("oauth.clientCredentials: clientId is required")
		}
	default:
		if err := endpoint(te.TokenURL, te.Issuer); err != nil {
			return fmt.Errorf("oauth.tokenExchange: %v", err)
		}
		if (te.SubjectToken == "") == (te.SubjectTokenFile == "") {
			return errors.New("oauth.tokenExchange: give subjectToken or subjectTokenFile")
		}
		if err := errors.Join(expand("tokenExchange.clientId", &te.ClientID), expandSecret("tokenExchange.clientSecret", &te.ClientSecret),
			expandSecret("tokenExchange.subjectToken", &te.SubjectToken)); err != nil {
			return err
		}
	}
	return nil
}

// expandEnv replaces each ${NAME} in s with the environment variable
// NAME ($${ is a literal ${). A variable that is not set, or empty, is an
// error naming it: a credential is never silently empty.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1] + "${")
			s = s[i+2:]
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", errors.New("an unterminated ${")
		}
		name := s[i+2 : i+j]
		if !validEnvName(name) {
			return "", fmt.Errorf("${%s}: not a variable name", name)
		}
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", fmt.Errorf("the environment variable %s is not set", name)
		}
		b.WriteString(s[:i] + v)
		s = s[i+j+1:]
	}
}

func validEnvName(n string) bool {
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for _, c := range n {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// upstreams makes the proxy upstreams of the (checked) file at path, in
// name order, on top of the bridge's flags (httpOpts, cmdOpts).
func (c *bridgeConfig) upstreams(path string, httpOpts pmcp.HTTPClientOptions, cmdOpts proxy.CommandOptions) ([]proxy.Upstream, error) {
	out := make([]proxy.Upstream, 0, len(c.MCPServers))
	for _, name := range c.names() {
		s := c.MCPServers[name]
		up, err := s.upstream(name, httpOpts, cmdOpts)
		if err != nil {
			return nil, fmt.Errorf("%s: server %q: %v", path, name, err)
		}
		out = append(out, up)
	}
	return out, nil
}

// upstream makes the proxy upstream of the (resolved) entry name, on top
// of the bridge's flags (httpOpts, cmdOpts).
func (s *bridgeServer) upstream(name string, httpOpts pmcp.HTTPClientOptions, cmdOpts proxy.CommandOptions) (proxy.Upstream, error) {
	up := proxy.Upstream{Name: name, Fingerprint: s.fingerprint()}
	if s.Timeout != "" {
		up.CallTimeout, _ = time.ParseDuration(s.Timeout) // checked by resolve
	}
	if b := s.Breaker; b != nil {
		up.Breaker.Failures = b.Failures
		if b.Cooldown != "" {
			up.Breaker.Cooldown, _ = time.ParseDuration(b.Cooldown)
		}
	}
	if s.URL != "" {
		ho := httpOpts
		if len(s.Headers) > 0 {
			ho.Header = ho.Header.Clone()
			if ho.Header == nil {
				ho.Header = http.Header{}
			}
			for k, v := range s.Headers {
				ho.Header.Set(k, v)
			}
		}
		if s.OAuth != nil {
			a, err := s.OAuth.authorizer()
			if err != nil {
				return up, err
			}
			ho.Authorizer = a
		}
		up.Dial = proxy.HTTP(s.URL, ho)
		return up, nil
	}
	co := cmdOpts
	co.Dir = s.Cwd
	co.Env = slices.Clone(co.Env)
	for k, v := range s.Env {
		co.Env = append(co.Env, k+"="+v)
	}
	dial, err := proxy.Command(s.Command, s.Args, co)
	if err != nil {
		return up, err
	}
	up.Dial, up.SessionHeaders = dial, sessionHeaders(co)
	return up, nil
}

// authorizer is the token source of the (resolved) oauth entry, shared
// by every session with the upstream.
func (o *bridgeOAuth) authorizer() (pmcp.HTTPAuthorizer, error) {
	if cc := o.ClientCredentials; cc != nil {
		return oauthclient.NewClientCredentials(oauthclient.ClientCredentials{TokenURL: cc.TokenURL, Issuer: cc.Issuer, ClientID: cc.ClientID,
			ClientSecret: cc.ClientSecret, Scopes: cc.Scopes, Resource: cc.Resource})
	}
	te := o.TokenExchange
	subject := func(context.Context) (pmcp.Secret, error) { return te.SubjectToken, nil }
	if path := te.SubjectTokenFile; path != "" {
		subject = func(context.Context) (pmcp.Secret, error) { return readSubjectToken(path) }
	}
	return oauthclient.NewTokenExchange(oauthclient.TokenExchange{TokenURL: te.TokenURL, Issuer: te.Issuer, ClientID: te.ClientID, ClientSecret: te.ClientSecret,
		SubjectToken: subject, SubjectTokenType: te.SubjectTokenType, Audience: te.Audience, Resource: te.Resource, Scopes: te.Scopes})
}

// readSubjectToken reads a subject token file (bounded, trimmed).
func readSubjectToken(path string) (pmcp.Secret, error) {
	b, err := readFileMax(path, maxSubjectTokenBytes)
	if err != nil {
		return "", err
	}
	return pmcp.Secret(strings.TrimSpace(string(b))), nil
}

// readFileMax reads the file at path, refusing one larger than limit bytes
// (without reading more than limit+1).
func readFileMax(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}

// fingerprint digests the (resolved) entry, secrets included, for
// proxy.Upstream.Fingerprint: a reload keeps the sessions of an entry
// that did not change.
func (s *bridgeServer) fingerprint() string {
	b, err := json.Marshal(s) // encoding/json: map keys sorted; secrets redacted
	if err != nil {
		return ""
	}
	h := sha256.New()
	h.Write(b)
	if o := s.OAuth; o != nil {
		var secrets []pmcp.Secret
		if cc := o.ClientCredentials; cc != nil {
			secrets = append(secrets, cc.ClientSecret)
		}
		if te := o.TokenExchange; te != nil {
			secrets = append(secrets, te.ClientSecret, te.SubjectToken)
		}
		for _, sec := range secrets {
			h.Write([]byte{0})
			h.Write([]byte(sec.Reveal()))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
