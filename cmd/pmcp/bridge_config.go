package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gopmcp/pmcp"
)

// bridgeVersion is the version the bridge announces up- and downstream.
const bridgeVersion = "0.1.0"

// maxBridgeConfigBytes bounds --config.
const maxBridgeConfigBytes = 1 << 20

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
	Headers map[string]string `json:"headers,omitempty"`
	// Type is accepted ("stdio", "http", "streamable-http") and otherwise
	// ignored: command or url decides.
	Type string `json:"type,omitempty"`
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
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBridgeConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBridgeConfigBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxBridgeConfigBytes)
	}
	var c bridgeConfig
	if err := pmcp.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(c.MCPServers) == 0 {
		return nil, fmt.Errorf("%s: no mcpServers", path)
	}
	return &c, nil
}

// oauthConfig is the upstream's OAuth client of --oauth: the authorization
// code grant with a loopback redirect (the URL to open is printed on
// stderr), tokens in a file store.
func oauthConfig(f *bridgeFlags, stderr io.Writer) (*pmcp.OAuthConfig, error) {
	host, port, err := net.SplitHostPort(f.oauthCallback)
	if err != nil || port == "" {
		return nil, fmt.Errorf("--oauth-callback wants host:port, got %q", f.oauthCallback)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--oauth-callback must be a loopback address, got %q", host)
	}
	path := f.oauthTokens
	if path == "" {
		if path, err = defaultTokenFile(); err != nil {
			return nil, fmt.Errorf("--oauth: token store: %v", err)
		}
	}
	secret := f.oauthSecret
	if s := os.Getenv("PMCP_OAUTH_CLIENT_SECRET"); s != "" {
		secret = s
	}
	redirect := "http://" + f.oauthCallback + "/callback"
	return &pmcp.OAuthConfig{
		ClientID:     f.oauthClientID,
		ClientSecret: pmcp.Secret(secret),
		ClientName:   "pmcp bridge",
		RedirectURL:  redirect,
		Scopes:       strings.Fields(f.oauthScopes),
		TokenStore:   pmcp.NewFileTokenStore(path),
		Authorize: func(ctx context.Context, authURL string) (string, error) {
			return loopbackAuthorize(ctx, f.oauthCallback, authURL, stderr)
		},
	}, nil
}

// loopbackAuthorize prints authURL and waits for the browser's redirect to
// http://addr/callback.
func loopbackAuthorize(ctx context.Context, addr, authURL string, stderr io.Writer) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("OAuth callback listener: %w", err)
	}
	got := make(chan string, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		select {
		case got <- "http://" + addr + r.URL.RequestURI():
		default:
		}
		fmt.Fprintln(w, "Authorization received; you can close this window.")
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	fmt.Fprintf(stderr, "pmcp: bridge: authorize the upstream by opening this URL:\n  %s\n", authURL)
	select {
	case u := <-got:
		return u, nil
	case <-ctx.Done():
		return "", errors.Join(errors.New("OAuth authorization not completed"), ctx.Err())
	}
}
