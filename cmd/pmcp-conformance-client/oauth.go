package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauthclient"
)

// Fixed values the suite's scenarios expect.
const (
	// redirectURL is never served: the authorization server auto-approves
	// and the client reads the code from the redirect itself.
	redirectURL = "http://localhost:3000/callback"
	// clientMetadataURL is the Client ID Metadata Document URL the suite
	// checks for in auth/basic-cimd.
	clientMetadataURL = "https://conformance-test.local/client-metadata.json"
)

// authContext is MCP_CONFORMANCE_CONTEXT of the auth scenarios.
type authContext struct {
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	ValidJWT         string `json:"valid_jwt"`
	IDPClientID      string `json:"idp_client_id"`
	IDPIDToken       string `json:"idp_id_token"`
	IDPIssuer        string `json:"idp_issuer"`
	IDPTokenEndpoint string `json:"idp_token_endpoint"`
}

// oauthConfig builds the client's OAuth configuration for an auth/*
// scenario from its name and context.
func (sc *scenario) oauthConfig() (*oauthclient.Config, error) {
	var ac authContext
	if sc.context != "" {
		if err := json.Unmarshal([]byte(sc.context), &ac); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	oc := &oauthclient.Config{
		ClientID:          ac.ClientID,
		ClientSecret:      pmcp.Secret(ac.ClientSecret),
		ClientMetadataURL: clientMetadataURL,
		ClientName:        "pmcp-conformance-client",
		RedirectURL:       redirectURL,
		Authorize:         followAuthorize,
	}
	if ac.PrivateKeyPEM != "" {
		k, err := oauthclient.ParsePrivateKeyPEM([]byte(ac.PrivateKeyPEM))
		if err != nil {
			return nil, err
		}
		oc.PrivateKey = k
	}
	switch sc.name {
	case "auth/client-credentials-basic", "auth/client-credentials-jwt":
		oc.Grant = oauthclient.GrantClientCredentials
	case "auth/wif-jwt-bearer":
		oc.Grant = oauthclient.GrantJWTBearer
		jwt := pmcp.Secret(ac.ValidJWT)
		oc.Assertion = func(context.Context) (pmcp.Secret, error) { return jwt, nil }
	case "auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow":
		oc.Grant = oauthclient.GrantEnterprise
		idt := pmcp.Secret(ac.IDPIDToken)
		oc.Enterprise = &oauthclient.Enterprise{
			TokenEndpoint: ac.IDPTokenEndpoint,
			ClientID:      ac.IDPClientID,
			IDToken:       func(context.Context) (pmcp.Secret, error) { return idt, nil },
		}
	case "auth/dpop", "auth/dpop-nonce":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		oc.DPoPKey = k
	}
	return oc, nil
}

// followAuthorize is the user agent: it requests the authorization URL
// and returns where the (auto-approving) server redirects, without
// following the redirect.
func followAuthorize(ctx context.Context, authURL string) (string, error) {
	c := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		if errors.Is(err, http.ErrNoLocation) {
			return "", fmt.Errorf("authorization endpoint answered HTTP %d without a redirect", resp.StatusCode)
		}
		return "", err
	}
	return loc.String(), nil
}
