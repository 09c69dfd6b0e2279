package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauth"
	"github.com/gopmcp/pmcp/oauthclient"
)

// The authorization checks of pmcp doctor: what a client meets after a
// 401, in the order it meets it.

// checkAuthorization follows a 401 (or 403 with a challenge) to the
// protected-resource metadata, the authorization server's metadata and
// its registration options, found the way the OAuth client finds them
// (package oauth). It returns the protected-resource metadata when it
// was found.
func checkAuthorization(ctx context.Context, a *doctorArgs, hc *http.Client, endpoint string, hse *pmcp.HTTPStatusError, r *checks) *oauth.ProtectedResourceMetadata {
	status := hse.StatusCode
	chs := oauth.ParseChallenges([]string{hse.WWWAuthenticate})
	if len(chs) == 0 {
		r.fail("authorization", fmt.Sprintf("HTTP %d without a WWW-Authenticate challenge", status),
			"answer 401 with WWW-Authenticate: Bearer resource_metadata=\"<metadata URL>\" (RFC 9728 §5.1) so clients can find the authorization server")
	} else {
		r.pass("authorization", "HTTP %d, WWW-Authenticate: %s", status, hse.WWWAuthenticate)
	}
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	challengeURL := oauth.ChallengeParam(chs, "resource_metadata")
	prm, err := oauth.DiscoverProtectedResource(cctx, hc, endpoint, challengeURL)
	fix := ""
	switch {
	case errors.Is(err, oauth.ErrResourceMismatch):
		fix = "set the document's resource to the URL clients use for the server"
	case err == nil && prm == nil:
		var where []string
		if eu, perr := url.Parse(endpoint); perr == nil {
			where = oauth.ProtectedResourceMetadataURLs(eu, challengeURL)
		}
		err = fmt.Errorf("no protected-resource metadata at %s", strings.Join(where, ", "))
		fix = "publish it (RFC 9728; in Go: auth.MountProtectedResourceMetadata) and name it in the 401's resource_metadata"
	case err == nil && len(prm.AuthorizationServers) == 0:
		err = errors.New("the protected-resource metadata lists no authorization_servers")
		fix = "list the issuer URL of the authorization server"
	}
	if err != nil {
		r.fail("resource metadata", errText(err), fix)
		r.skip("no usable protected-resource metadata", "server metadata", "registration")
		return nil
	}
	r.pass("resource metadata", "resource %s, authorization server %s", prm.Resource, strings.Join(prm.AuthorizationServers, ", "))

	issuer := prm.AuthorizationServers[0]
	md, err := oauth.DiscoverAuthServer(cctx, hc, issuer, oauth.DiscoverOptions{})
	if err != nil {
		r.fail("server metadata", errText(err),
			"the issuer must publish RFC 8414 or OpenID Connect metadata whose issuer is exactly "+issuer)
		r.skip("no authorization-server metadata", "registration")
		return prm
	}
	r.pass("server metadata", "%s: issuer %s", md.URL, md.Issuer)

	switch {
	case md.RegistrationEndpoint != "" && md.ClientIDMetadataDocumentSupported:
		r.pass("registration", "dynamic registration at %s; client ID metadata documents supported (--client-metadata-url)", md.RegistrationEndpoint)
	case md.RegistrationEndpoint != "":
		r.pass("registration", "dynamic registration at %s", md.RegistrationEndpoint)
	case md.ClientIDMetadataDocumentSupported:
		r.pass("registration", "client ID metadata documents supported: pmcp login --client-metadata-url URL")
	default:
		r.fail("registration", "neither dynamic registration nor client ID metadata documents",
			"register a client with the authorization server and sign in with pmcp login --url "+endpoint+" --client-id ID")
	}
	return prm
}

// checkToken judges the token pmcp login stored for endpoint, a server
// that asked for one; it returns the credentials when they pass.
func checkToken(ctx context.Context, a *doctorArgs, endpoint string, prm *oauth.ProtectedResourceMetadata, r *checks) *oauthclient.Credentials {
	login := "pmcp login --url " + endpoint
	st, err := a.auth.store()
	if err != nil {
		r.fail("token", err.Error(), "")
		return nil
	}
	keys, err := st.Keys(ctx)
	if err != nil {
		r.fail("token", "token store: "+err.Error(), "")
		return nil
	}
	var key oauthclient.TokenKey
	var creds *oauthclient.Credentials
	for _, k := range keys {
		if !sameResource(k.Resource, endpoint) {
			continue
		}
		if c, err := st.Load(ctx, k); err == nil && c != nil && c.AccessToken != "" {
			key, creds = k, c
			break
		}
	}
	if creds == nil {
		r.fail("token", "no token stored for this server", login)
		return nil
	}
	if prm != nil && !slices.Contains(prm.AuthorizationServers, key.Issuer) {
		r.fail("token", fmt.Sprintf("stored from %s, but the server now trusts %s", key.Issuer, strings.Join(prm.AuthorizationServers, ", ")), login)
		return nil
	}
	exp := creds.Expiry
	var aud []string
	if tok, err := jwt.ParseSigned(creds.AccessToken.Reveal(), tokenAlgs); err == nil {
		var cl jwt.Claims
		if tok.UnsafeClaimsWithoutVerification(&cl) == nil {
			aud = cl.Audience
			if exp.IsZero() && cl.Expiry != nil {
				exp = cl.Expiry.Time()
			}
		}
	}
	if canon, cerr := oauth.Canonical(endpoint); len(aud) > 0 && (cerr != nil || !oauth.AudienceHas(aud, canon)) {
		r.fail("token", fmt.Sprintf("the stored token's audience is %s, not this server: the server refuses it", strings.Join(aud, ", ")),
			"pmcp logout --url "+endpoint+" && "+login)
		return nil
	}
	if !exp.IsZero() && time.Now().After(exp) {
		if creds.RefreshToken != "" {
			r.pass("token", "expired %s ago; a refresh token is stored, the next command renews it", time.Since(exp).Round(time.Second))
			r.skip("the token is renewed on first use", "token use")
			return nil
		}
		r.fail("token", fmt.Sprintf("the stored token expired %s ago (%s) and there is no refresh token", time.Since(exp).Round(time.Second), exp.Format(time.RFC3339)), login)
		return nil
	}
	what := "opaque (its audience is the server's to judge)"
	if len(aud) > 0 {
		what = "audience " + strings.Join(aud, ", ")
	}
	left := "no expiry known"
	if !exp.IsZero() {
		left = "expires in " + time.Until(exp).Round(time.Second).String()
	}
	r.pass("token", "stored from %s, %s, %s", key.Issuer, what, left)
	return creds
}

// checkTokenUse presents the stored token (a bearer token; a DPoP one
// needs a proof, which only the OAuth client makes) in an initialize: the
// server's verdict, and the era it then speaks. Nothing is registered,
// refreshed or stored.
func checkTokenUse(ctx context.Context, a *doctorArgs, hc *http.Client, endpoint string, creds *oauthclient.Credentials, r *checks) {
	if creds == nil {
		r.skip("no usable stored token", "token use")
		return
	}
	if !strings.EqualFold(creds.TokenType, "Bearer") && creds.TokenType != "" {
		r.skip(creds.TokenType+" tokens are presented by the OAuth client only", "token use")
		return
	}
	h := a.headers.Clone()
	h.Set("Authorization", "Bearer "+creds.AccessToken.Reveal())
	c := pmcp.NewClient(pmcp.ClientOptions{Name: "pmcp-doctor", Version: "1.0.0", CallTimeout: a.timeout, ProbeTimeout: a.timeout,
		Logger: slog.New(slog.DiscardHandler)})
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	s, err := c.ConnectHTTP(cctx, endpoint, pmcp.HTTPClientOptions{Header: h, HTTPClient: hc})
	if err != nil {
		r.fail("token use", "the server refuses the stored token: "+errText(err), "pmcp login --url "+endpoint)
		return
	}
	defer s.Close()
	r.pass("token use", "the server accepts it: %s era, protocol version %s", s.Era(), s.ProtocolVersion())
}

// tokenAlgs are the signature algorithms doctor reads JWT access tokens
// in (it only reads their claims; the server verifies them).
var tokenAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}
