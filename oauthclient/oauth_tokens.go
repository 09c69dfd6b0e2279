package oauthclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/internal/peer"
	"github.com/gopmcp/pmcp/oauth"
)

// tokenResponse is an RFC 6749 §5.1 access token response.
type tokenResponse struct {
	AccessToken     string      `json:"access_token"`
	TokenType       string      `json:"token_type"`
	ExpiresIn       flexSeconds `json:"expires_in"`
	RefreshToken    string      `json:"refresh_token"`
	Scope           string      `json:"scope"`
	IssuedTokenType string      `json:"issued_token_type"`
}

// flexSeconds is expires_in: a JSON number, or (from some servers) a
// string holding one. Fractions are truncated; negative values are 0.
type flexSeconds int64

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexSeconds) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" || s == "" {
		*f = 0
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v != v {
		return fmt.Errorf("expires_in %q is not a number", capPeerString(s))
	}
	*f = flexSeconds(max(0, min(v, 1<<40)))
	return nil
}

const (
	tokenResponseMaxBytes = 64 << 10
	grantTokenExchange    = "urn:ietf:params:oauth:grant-type:token-exchange"
	assertionTypeJWT      = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	tokenTypeIDToken      = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG        = "urn:ietf:params:oauth:token-type:id-jag"
)

// useDPoP reports whether token requests to the authorization server of
// meta carry DPoP proofs: a key is configured and its algorithm is
// advertised.
func (o *oauthTransport) useDPoP(meta *oauth.AuthServerMetadata) bool {
	return o.dpop != nil && slices.Contains(meta.DPoPSigningAlgValuesSupported, o.dpop.alg())
}

// postForm sends a form to an authorization server endpoint and decodes
// the JSON answer into v. An error answer is an *Error. With dpop,
// the request carries a proof, and a use_dpop_nonce answer is retried
// once with the nonce.
func (o *oauthTransport) postForm(ctx context.Context, endpoint string, form url.Values, auth func(*http.Request), dpop bool, v any) error {
	var d *dpopSigner
	if dpop {
		d = o.dpop
	}
	return postForm(ctx, o.as, endpoint, form, auth, d, o.now, v)
}

// postForm is oauthTransport.postForm with its client (as), its DPoP
// signer (nil: no proof) and clock given: the one way this package talks
// to a token endpoint (bounded answers, errors as *Error).
func postForm(ctx context.Context, as *http.Client, endpoint string, form url.Values, auth func(*http.Request), dp *dpopSigner, now func() time.Time, v any) error {
	eu, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		if auth != nil {
			auth(req)
		}
		if dp != nil {
			p, err := dp.proof(http.MethodPost, eu, "", now())
			if err != nil {
				return err
			}
			req.Header.Set("DPoP", p)
		}
		resp, err := as.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, tokenResponseMaxBytes+1))
		peer.DrainClose(resp.Body)
		if err != nil {
			return err
		}
		if len(b) > tokenResponseMaxBytes {
			return fmt.Errorf("pmcp: %s: response larger than %d bytes", endpoint, tokenResponseMaxBytes)
		}
		fresh := dp != nil && dp.setNonce(eu, resp.Header.Get("DPoP-Nonce"))
		if resp.StatusCode/100 != 2 {
			oe := &Error{Endpoint: endpoint, StatusCode: resp.StatusCode}
			var e struct {
				Error            string `json:"error"`
				ErrorDescription string `json:"error_description"`
			}
			if json.Unmarshal(b, &e) == nil {
				oe.Code, oe.Description = capPeerString(e.Error), capPeerString(e.ErrorDescription)
			}
			if oe.Code == "" {
				oe.Code = "http_" + fmt.Sprint(resp.StatusCode)
			}
			if oe.Code == "use_dpop_nonce" && fresh && try == 0 {
				continue
			}
			return oe
		}
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("pmcp: %s: malformed response: %s", endpoint, capPeerString(err.Error()))
		}
		return nil
	}
}

// tokenRequest posts a token request with the client's authentication.
func (o *oauthTransport) tokenRequest(ctx context.Context, fs *flowState, form url.Values) (*tokenResponse, error) {
	auth, err := o.clientAuth(fs, form)
	if err != nil {
		return nil, err
	}
	var tr tokenResponse
	if err := o.postForm(ctx, fs.meta.TokenEndpoint, form, auth, o.useDPoP(fs.meta), &tr); err != nil {
		return nil, err
	}
	if err := tr.check(fs.meta.TokenEndpoint, "DPoP"); err != nil {
		return nil, err
	}
	return &tr, nil
}

// check refuses a token response without an access token or whose
// token_type is neither Bearer nor one of also.
func (tr *tokenResponse) check(endpoint string, also ...string) error {
	if tr.AccessToken == "" {
		return fmt.Errorf("pmcp: %s: the token response has no access_token", endpoint)
	}
	if tt := tr.TokenType; tt != "" && !strings.EqualFold(tt, "Bearer") && !slices.ContainsFunc(also, func(a string) bool { return strings.EqualFold(tt, a) }) {
		return fmt.Errorf("pmcp: %s: unsupported token_type %q", endpoint, capPeerString(tt))
	}
	return nil
}

// clientAuth adds the client authentication of fs.creds to form, or
// returns a function that adds it to the request (client_secret_basic).
func (o *oauthTransport) clientAuth(fs *flowState, form url.Values) (func(*http.Request), error) {
	c := fs.creds
	switch c.TokenEndpointAuthMethod {
	case "client_secret_basic":
		return secretAuth(c.ClientID, c.ClientSecret, form), nil
	case "client_secret_post":
		form.Set("client_id", c.ClientID)
		form.Set("client_secret", c.ClientSecret.Reveal())
	case "private_key_jwt":
		if o.cfg.PrivateKey == nil {
			return nil, errors.New("pmcp: private_key_jwt needs oauthclient.Config.PrivateKey")
		}
		a, err := clientAssertion(o.cfg.PrivateKey, o.cfg.PrivateKeyID, c.ClientID, fs.meta.Issuer, o.now())
		if err != nil {
			return nil, err
		}
		form.Set("client_id", c.ClientID)
		form.Set("client_assertion_type", assertionTypeJWT)
		form.Set("client_assertion", a)
	default: // none
		form.Set("client_id", c.ClientID)
	}
	return nil, nil
}

// chooseAuthMethod picks the token endpoint authentication from what the
// authorization server lists (RFC 8414: absent means
// client_secret_basic), given what the client has.
func (o *oauthTransport) chooseAuthMethod(meta *oauth.AuthServerMetadata, hasSecret bool) string {
	listed := meta.TokenEndpointAuthMethodsSupported
	if len(listed) == 0 {
		listed = []string{"client_secret_basic"}
	}
	if o.cfg.PrivateKey != nil && slices.Contains(listed, "private_key_jwt") {
		return "private_key_jwt"
	}
	if hasSecret {
		for _, m := range []string{"client_secret_basic", "client_secret_post"} {
			if slices.Contains(listed, m) {
				return m
			}
		}
	}
	if hasSecret && !slices.Contains(listed, "none") {
		return "client_secret_basic"
	}
	return "none"
}

// ensureClient gives fs.creds a client registration at the authorization
// server, in the order MCP prescribes: a registration already stored for
// this issuer, pre-registered credentials, a Client ID Metadata
// Document, dynamic registration.
func (o *oauthTransport) ensureClient(ctx context.Context, fs *flowState, grant Grant) error {
	c, meta, cfg := fs.creds, fs.meta, o.cfg
	if c.ClientID != "" {
		return nil
	}
	// Pre-registered credentials belong to one authorization server:
	// ClientIssuer, or else the first one they were used with (SEP-2352).
	o.mu.Lock()
	bound := cfg.ClientIssuer
	if bound == "" {
		bound = o.preIssuer
	}
	preOK := cfg.ClientID != "" && (bound == "" || bound == meta.Issuer)
	if preOK {
		o.preIssuer = meta.Issuer
	}
	o.mu.Unlock()
	switch {
	case preOK:
		c.ClientID, c.ClientSecret = cfg.ClientID, cfg.ClientSecret
		c.TokenEndpointAuthMethod = o.chooseAuthMethod(meta, cfg.ClientSecret != "")
		return nil
	case cfg.ClientMetadataURL != "" && meta.ClientIDMetadataDocumentSupported && grant == GrantAuthorizationCode:
		c.ClientID, c.ClientSecret = cfg.ClientMetadataURL, ""
		c.TokenEndpointAuthMethod = "none"
		if cfg.PrivateKey != nil && slices.Contains(meta.TokenEndpointAuthMethodsSupported, "private_key_jwt") {
			c.TokenEndpointAuthMethod = "private_key_jwt"
		}
		return nil
	case meta.RegistrationEndpoint != "" && grant == GrantAuthorizationCode:
		return o.register(ctx, fs)
	case cfg.ClientID != "":
		return fmt.Errorf("%w: the pre-registered client belongs to %s, the server now uses %s", ErrNoRegistration, bound, meta.Issuer)
	}
	return fmt.Errorf("%w (%s)", ErrNoRegistration, meta.Issuer)
}

// register performs RFC 7591 dynamic client registration.
func (o *oauthTransport) register(ctx context.Context, fs *flowState) error {
	cfg, meta := o.cfg, fs.meta
	if cfg.RedirectURL == "" {
		return errors.New("pmcp: dynamic client registration needs oauthclient.Config.RedirectURL")
	}
	appType := cfg.ApplicationType
	if appType == "" {
		appType = "web"
		if ru, err := url.Parse(cfg.RedirectURL); err == nil && (oauth.IsLoopbackHost(ru.Hostname()) || (ru.Scheme != "http" && ru.Scheme != "https")) {
			appType = "native"
		}
	}
	name := cfg.ClientName
	if name == "" {
		name = "pmcp"
	}
	method := "none"
	if listed := meta.TokenEndpointAuthMethodsSupported; len(listed) > 0 && !slices.Contains(listed, "none") {
		method = o.chooseAuthMethod(meta, true)
	}
	grants := []string{"authorization_code", "refresh_token"}
	body := map[string]any{
		"client_name":                name,
		"redirect_uris":              []string{cfg.RedirectURL},
		"grant_types":                grants,
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
		"application_type":           appType,
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.RegistrationEndpoint, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := o.as.Do(req)
	if err != nil {
		return err
	}
	rb, err := io.ReadAll(io.LimitReader(resp.Body, tokenResponseMaxBytes+1))
	peer.DrainClose(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		oe := &Error{Endpoint: meta.RegistrationEndpoint, StatusCode: resp.StatusCode, Code: fmt.Sprintf("http_%d", resp.StatusCode)}
		var e struct {
			Error            string `json:"error"`
			ErrorDescription string `json:"error_description"`
		}
		if json.Unmarshal(rb, &e) == nil && e.Error != "" {
			oe.Code, oe.Description = capPeerString(e.Error), capPeerString(e.ErrorDescription)
		}
		return oe
	}
	var r struct {
		ClientID                string `json:"client_id"`
		ClientSecret            string `json:"client_secret"`
		TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
	}
	if len(rb) > tokenResponseMaxBytes || json.Unmarshal(rb, &r) != nil || r.ClientID == "" {
		return fmt.Errorf("pmcp: %s: malformed registration response", meta.RegistrationEndpoint)
	}
	c := fs.creds
	c.ClientID, c.ClientSecret = r.ClientID, pmcp.Secret(r.ClientSecret)
	switch r.TokenEndpointAuthMethod {
	case "none", "client_secret_basic", "client_secret_post":
		c.TokenEndpointAuthMethod = r.TokenEndpointAuthMethod
	default:
		c.TokenEndpointAuthMethod = o.chooseAuthMethod(meta, r.ClientSecret != "")
	}
	if c.TokenEndpointAuthMethod != "none" && r.ClientSecret == "" {
		c.TokenEndpointAuthMethod = "none"
	}
	// Keep the registration even if the rest of the flow fails.
	return o.store.Save(ctx, fs.key, c)
}

// authorizationCode runs the authorization code grant with PKCE.
func (o *oauthTransport) authorizationCode(ctx context.Context, fs *flowState, scopes []string) (*tokenResponse, error) {
	cfg, meta := o.cfg, fs.meta
	if cfg.Authorize == nil || cfg.RedirectURL == "" {
		return nil, errors.New("pmcp: the authorization code grant needs oauthclient.Config.Authorize and RedirectURL")
	}
	if !meta.Fallback && !slices.Contains(meta.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("%w (%s)", ErrPKCEUnsupported, meta.Issuer)
	}
	if meta.AuthorizationEndpoint == "" {
		return nil, fmt.Errorf("%w: %s lists no authorization_endpoint", ErrMetadata, meta.Issuer)
	}
	verifier := oauth.PKCEVerifier()
	state := oauth.RandomToken(24)
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {fs.creds.ClientID},
		"redirect_uri":          {cfg.RedirectURL},
		"code_challenge":        {oauth.PKCES256(verifier)},
		"code_challenge_method": {"S256"},
		"state":                 {state},
		"resource":              {fs.resource},
	}
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	authURL, err := url.Parse(meta.AuthorizationEndpoint)
	if err != nil {
		return nil, err
	}
	aq := authURL.Query()
	for k, v := range q {
		aq[k] = v
	}
	authURL.RawQuery = aq.Encode()
	redirected, err := cfg.Authorize(ctx, authURL.String())
	if err != nil {
		return nil, err
	}
	code, err := o.checkAuthorizationResponse(meta, redirected, state)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {cfg.RedirectURL},
		"code_verifier": {verifier},
		"resource":      {fs.resource},
	}
	return o.tokenRequest(ctx, fs, form)
}

// checkAuthorizationResponse validates the redirect back to the client
// and returns the code. The iss parameter (RFC 9207) is checked first,
// error responses included: present, it must equal the issuer exactly
// (no normalisation of any kind); absent, it is an error only when the
// authorization server advertised it.
func (o *oauthTransport) checkAuthorizationResponse(meta *oauth.AuthServerMetadata, redirected, state string) (string, error) {
	ru, err := url.Parse(redirected)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrAuthorizationResponse, err)
	}
	want, err := url.Parse(o.cfg.RedirectURL)
	if err != nil {
		return "", err
	}
	if !strings.EqualFold(ru.Scheme, want.Scheme) || !strings.EqualFold(ru.Host, want.Host) || ru.Path != want.Path {
		return "", fmt.Errorf("%w: the redirect is not to %s", ErrAuthorizationResponse, o.cfg.RedirectURL)
	}
	p := ru.Query()
	switch iss, ok := p["iss"]; {
	case ok && (len(iss) != 1 || iss[0] != meta.Issuer):
		return "", fmt.Errorf("%w: the authorization response names issuer %q, not %q", ErrIssuerMismatch, capPeerString(strings.Join(iss, ",")), meta.Issuer)
	case !ok && meta.IssParameterSupported:
		return "", fmt.Errorf("%w: the authorization response lacks the iss parameter %s advertised", ErrIssuerMismatch, meta.Issuer)
	}
	if p.Get("state") != state {
		return "", fmt.Errorf("%w: state mismatch", ErrAuthorizationResponse)
	}
	if e := p.Get("error"); e != "" {
		return "", &Error{Endpoint: meta.AuthorizationEndpoint, Code: capPeerString(e), Description: capPeerString(p.Get("error_description"))}
	}
	code := p.Get("code")
	if code == "" {
		return "", fmt.Errorf("%w: no code", ErrAuthorizationResponse)
	}
	return code, nil
}

// refresh uses the refresh token of fs.creds.
func (o *oauthTransport) refresh(ctx context.Context, fs *flowState) error {
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {fs.creds.RefreshToken.Reveal()},
		"resource":      {fs.resource},
	}
	tr, err := o.tokenRequest(ctx, fs, form)
	if err != nil {
		return err
	}
	return o.accept(ctx, fs, tr)
}

func scopeForm(form url.Values, scopes []string) url.Values {
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	return form
}

// clientCredentials runs the client credentials grant.
func (o *oauthTransport) clientCredentials(ctx context.Context, fs *flowState, scopes []string) (*tokenResponse, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {fs.resource}}
	return o.tokenRequest(ctx, fs, scopeForm(form, scopes))
}

// jwtBearer runs the RFC 7523 JWT bearer grant with the configured
// assertion.
func (o *oauthTransport) jwtBearer(ctx context.Context, fs *flowState, scopes []string) (*tokenResponse, error) {
	if o.cfg.Assertion == nil {
		return nil, errors.New("pmcp: the JWT bearer grant needs oauthclient.Config.Assertion")
	}
	a, err := o.cfg.Assertion(ctx)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {string(GrantJWTBearer)}, "assertion": {a.Reveal()}, "resource": {fs.resource}}
	return o.tokenRequest(ctx, fs, scopeForm(form, scopes))
}

// enterprise exchanges the user's identity token for an ID-JAG at the
// identity provider (RFC 8693), then presents it as a JWT bearer grant.
func (o *oauthTransport) enterprise(ctx context.Context, fs *flowState, scopes []string) (*tokenResponse, error) {
	e := o.cfg.Enterprise
	if e == nil || e.IDToken == nil || e.TokenEndpoint == "" {
		return nil, errors.New("pmcp: enterprise-managed authorization needs oauthclient.Config.Enterprise with TokenEndpoint and IDToken")
	}
	if _, err := oauth.CheckCredentialURL(e.TokenEndpoint); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMetadata, err)
	}
	idt, err := e.IDToken(ctx)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":           {grantTokenExchange},
		"subject_token":        {idt.Reveal()},
		"subject_token_type":   {tokenTypeIDToken},
		"requested_token_type": {tokenTypeIDJAG},
		"audience":             {fs.meta.Issuer},
		"resource":             {fs.resource},
	}
	scopeForm(form, scopes)
	auth := secretAuth(e.ClientID, e.ClientSecret, form)
	var xr tokenResponse
	if err := o.postForm(ctx, e.TokenEndpoint, form, auth, false, &xr); err != nil {
		return nil, err
	}
	if xr.AccessToken == "" {
		return nil, fmt.Errorf("pmcp: %s: the token exchange returned no token", e.TokenEndpoint)
	}
	if xr.IssuedTokenType != "" && xr.IssuedTokenType != tokenTypeIDJAG {
		return nil, fmt.Errorf("pmcp: %s: the token exchange issued %q, not an ID-JAG", e.TokenEndpoint, capPeerString(xr.IssuedTokenType))
	}
	grant := url.Values{"grant_type": {string(GrantJWTBearer)}, "assertion": {xr.AccessToken}, "resource": {fs.resource}}
	return o.tokenRequest(ctx, fs, scopeForm(grant, scopes))
}

// secretAuth authenticates a client at a token endpoint with its secret
// (client_secret_basic, RFC 6749 §2.3.1: both form-encoded), or, without
// one, names it in form (a public client; nothing with no client id).
func secretAuth(id string, secret pmcp.Secret, form url.Values) func(*http.Request) {
	if secret == "" {
		if id != "" {
			form.Set("client_id", id)
		}
		return nil
	}
	u, p := url.QueryEscape(id), url.QueryEscape(secret.Reveal())
	return func(r *http.Request) { r.SetBasicAuth(u, p) }
}
