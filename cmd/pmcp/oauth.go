package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauth"
	"github.com/gopmcp/pmcp/oauthclient"
)

// tokenStoreEnv overrides where the CLI keeps OAuth credentials (the
// --token-store flag wins over it).
const tokenStoreEnv = "PMCP_TOKEN_STORE"

// browserEnv names the command that opens the authorization URL (the
// usual BROWSER convention); "none" never opens one, only prints the URL.
const browserEnv = "BROWSER"

// clientSecretEnv gives --client-secret without putting it on the command
// line (where other users can see it); the flag wins.
const clientSecretEnv = "PMCP_OAUTH_CLIENT_SECRET"

// defaultLoginTimeout bounds `pmcp login`'s wait for the user to finish
// in the browser (the client commands are bounded by --timeout instead).
const defaultLoginTimeout = 5 * time.Minute

// callbackPath is the path of the loopback redirect URI.
const callbackPath = "/callback"

// errLoginRequired: the server wants authorization, stored credentials
// (if any) did not do, and the CLI may not start a browser login.
var errLoginRequired = errors.New("the server requires authorization: run `pmcp login --url URL`, or add --login")

// authArgs are the OAuth flags of the client commands, login and logout.
type authArgs struct {
	login        bool // authorize in the browser on a 401 even without a terminal
	noAuth       bool // never answer a 401 with OAuth
	clientID     string
	clientSecret string
	metadataURL  string // Client ID Metadata Document
	storePath    string
	scopes       []string
	tty          bool // stderr is a terminal: a user can follow a login

	mu       sync.Mutex
	listener *loopback
}

// register adds the OAuth flags: the same for every command that talks
// to a server (the client commands, login and bridge's upstreams).
func (a *authArgs) register(fs *flag.FlagSet, login bool) {
	if !login {
		fs.BoolVar(&a.login, "login", false, "on a 401, sign in in a browser even without a terminal (on a terminal that is the default)")
		fs.BoolVar(&a.noAuth, "no-auth", false, "never use OAuth")
	}
	fs.StringVar(&a.clientID, "client-id", "", "an OAuth client registered beforehand with the authorization server (else one is registered)")
	fs.StringVar(&a.clientSecret, "client-secret", "", "its secret (prefer $"+clientSecretEnv+")")
	fs.StringVar(&a.metadataURL, "client-metadata-url", "", "the client's metadata document (https), used where the server supports client ID metadata")
	fs.Func("scopes", "space-separated scopes to ask for when the server names none", func(s string) error {
		a.scopes = strings.Fields(s)
		return nil
	})
	a.registerStore(fs)
}

// registerStore adds --token-store.
func (a *authArgs) registerStore(fs *flag.FlagSet) {
	fs.StringVar(&a.storePath, "token-store", "", "credentials file (mode 0600; default $"+tokenStoreEnv+", else <config dir>/pmcp/tokens.json)")
}

// tokenStorePath is where credentials are kept: --token-store, else
// $PMCP_TOKEN_STORE, else <user config dir>/pmcp/tokens.json.
func (a *authArgs) tokenStorePath() (string, error) {
	if a.storePath != "" {
		return a.storePath, nil
	}
	if p := os.Getenv(tokenStoreEnv); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no place for the token store (%v): give --token-store PATH", err)
	}
	return filepath.Join(dir, "pmcp", "tokens.json"), nil
}

// store opens the file token store; its directory is created (0700) on
// the first save, so commands against servers without OAuth never touch
// the disk. Without a place for it the store is still returned, empty
// (see fileStore), with the reason as the error: commands that exist to
// keep tokens (login, logout) fail on it, the others need it only to
// keep a token.
func (a *authArgs) store() (*fileStore, error) {
	p, err := a.tokenStorePath()
	if err != nil {
		return &fileStore{err: err}, err
	}
	return &fileStore{FileTokenStore: oauthclient.NewFileTokenStore(p), dir: filepath.Dir(p)}, nil
}

// fileStore is oauthclient's FileTokenStore that creates its directory first.
// Without a place for it (no --token-store, $PMCP_TOKEN_STORE or config
// directory, as under env -i, the way hosts start commands) FileTokenStore
// is nil and err says why: nothing is stored, so Load finds nothing, and
// Save, Delete and Keys fail with err.
type fileStore struct {
	*oauthclient.FileTokenStore
	dir string
	err error
}

// Load implements oauthclient.TokenStore.
func (s *fileStore) Load(ctx context.Context, key oauthclient.TokenKey) (*oauthclient.Credentials, error) {
	if s.err != nil {
		return nil, nil
	}
	return s.FileTokenStore.Load(ctx, key)
}

// Save implements oauthclient.TokenStore.
func (s *fileStore) Save(ctx context.Context, key oauthclient.TokenKey, c *oauthclient.Credentials) error {
	if s.err != nil {
		return s.err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return s.FileTokenStore.Save(ctx, key, c)
}

// Delete implements oauthclient.TokenStore.
func (s *fileStore) Delete(ctx context.Context, key oauthclient.TokenKey) error {
	if s.err != nil {
		return s.err
	}
	return s.FileTokenStore.Delete(ctx, key)
}

// Keys lists the stored keys.
func (s *fileStore) Keys(ctx context.Context) ([]oauthclient.TokenKey, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.FileTokenStore.Keys(ctx)
}

// apply gives an HTTP connection its OAuth configuration: stored tokens
// (and their refresh) are always used; a browser login is started on a
// 401 only with --login or on a terminal. close must be called once the
// session is closed.
func (a *authArgs) apply(o *pmcp.HTTPClientOptions, stderr io.Writer) error {
	if a.noAuth || o.Header.Get("Authorization") != "" {
		// A token given with --header is the user's choice: a refusal
		// is reported, not answered with another token.
		return nil
	}
	// Without a place for the store, stored tokens are simply absent: a
	// server that needs none still works (st.err matters only when a
	// token is to be kept).
	st, _ := a.store()
	interactive := a.interactive()
	redirect := "http://127.0.0.1" + callbackPath
	lb, err := listenLoopback()
	switch {
	case err == nil:
		a.mu.Lock()
		a.listener = lb
		a.mu.Unlock()
		redirect = lb.redirectURL
	case a.login:
		return err
	default:
		// Stored tokens still work; only a browser login is impossible.
		interactive = false
	}
	secret := a.clientSecret
	if secret == "" {
		secret = os.Getenv(clientSecretEnv)
	}
	cfg := &oauthclient.Config{
		ClientID:     a.clientID,
		ClientSecret: pmcp.Secret(secret),
		Scopes:       a.scopes,
		// An https URL whose document lists http://127.0.0.1/callback
		// (loopback redirects match with any port, RFC 8252 §7.3).
		ClientMetadataURL: a.metadataURL,
		ClientName:        "pmcp CLI",
		ApplicationType:   "native",
		RedirectURL:       redirect,
		TokenStore:        st,
		Authorize: func(ctx context.Context, authURL string) (string, error) {
			if !interactive {
				return "", errLoginRequired
			}
			if st.err != nil {
				// Signing in would be for nothing: the token could not be
				// kept.
				return "", st.err
			}
			return lb.authorize(ctx, authURL, stderr)
		},
	}
	o.Authorizer = cfg
	return nil
}

// interactive reports whether a 401 may start a browser sign-in: --login,
// or a terminal to follow it on.
func (a *authArgs) interactive() bool { return a.login || a.tty }

// close stops the loopback listener, if one was started.
func (a *authArgs) close() {
	a.mu.Lock()
	lb := a.listener
	a.listener = nil
	a.mu.Unlock()
	if lb != nil {
		lb.close()
	}
}

// loopback is the RFC 8252 loopback redirect: an HTTP server on
// 127.0.0.1 with a port of the kernel's choosing, whose one path takes the
// authorization response.
//
// The port is bound at once (the redirect URI goes into the registration
// and the authorization request), but served only from the first
// authorization on: commands that never need a login run no goroutine.
type loopback struct {
	redirectURL string
	ln          net.Listener
	srv         *http.Server
	start       sync.Once
	done        chan struct{} // closed when Serve returned
	responses   chan string   // the redirected URLs, full
}

func listenLoopback() (*loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loopback redirect listener: %w", err)
	}
	lb := &loopback{
		redirectURL: "http://" + ln.Addr().String() + callbackPath,
		ln:          ln,
		done:        make(chan struct{}),
		responses:   make(chan string, 1),
	}
	mux := http.NewServeMux()
	mux.HandleFunc(callbackPath, lb.callback)
	lb.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return lb, nil
}

// serve starts serving the redirect URI (once).
func (lb *loopback) serve() {
	lb.start.Do(func() {
		go func() {
			defer close(lb.done)
			_ = lb.srv.Serve(lb.ln)
		}()
	})
}

func (lb *loopback) close() {
	served := true
	lb.start.Do(func() { served = false })
	if !served {
		_ = lb.ln.Close()
		return
	}
	_ = lb.srv.Close()
	<-lb.done
}

// callback receives the browser's redirect. Only a request carrying a
// code or an error is an authorization response; the first one is
// handed over (the flow checks state and iss), later ones are refused.
func (lb *loopback) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method != http.MethodGet || (q.Get("code") == "" && q.Get("error") == "") {
		http.Error(w, "not an authorization response", http.StatusBadRequest)
		return
	}
	u := strings.TrimSuffix(lb.redirectURL, callbackPath) + r.URL.RequestURI()
	select {
	case lb.responses <- u:
	default:
		http.Error(w, "an authorization response was already received", http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	msg := "You are signed in; you can close this window and return to pmcp."
	if e := q.Get("error"); e != "" {
		msg = "The authorization server answered " + e + "; see pmcp's output."
	}
	fmt.Fprintf(w, "<!doctype html><title>pmcp</title><p>%s</p>\n", html.EscapeString(msg))
}

// authorize shows the user the authorization URL (in a browser when one
// can be started, and always on stderr) and waits, bounded by ctx, for the
// redirect back to the loopback listener.
func (lb *loopback) authorize(ctx context.Context, authURL string, stderr io.Writer) (string, error) {
	lb.serve()
	fmt.Fprintf(stderr, "pmcp: authorization needed; open this URL in a browser if none opened:\n  %s\n", authURL)
	openBrowser(authURL)
	select {
	case u := <-lb.responses:
		return u, nil
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for the browser's redirect to %s: %w", lb.redirectURL, ctx.Err())
	}
}

// openBrowser starts $BROWSER, else the platform's opener, on u, without
// waiting for it; failing to start one is not an error (the URL was
// printed).
func openBrowser(u string) {
	name, args := os.Getenv(browserEnv), []string{u}
	switch {
	case name == "none":
		return
	case name != "":
	case runtime.GOOS == "darwin":
		name = "open"
	case runtime.GOOS == "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler", u}
	default:
		name = "xdg-open"
	}
	if _, err := exec.LookPath(name); err != nil {
		return
	}
	// Not tied to ctx: a browser started directly must outlive the login.
	cmd := exec.Command(name, args...)
	if cmd.Start() == nil {
		go func() { _ = cmd.Wait() }()
	}
}

// sameResource reports whether a stored credential's resource is the
// server the user named: the same string, or the same resource in the
// canonical form the SDK compares resources in everywhere (scheme and
// host without case, default port dropped, the path exact but for the
// bare origin's "/").
func sameResource(stored, given string) bool {
	return stored == given || oauth.Same(stored, given)
}

// forget deletes the stored credentials of the server at resource (every
// issuer), or of every server when resource is empty; it returns how many
// entries it removed.
func forget(ctx context.Context, st *fileStore, resource string) (int, error) {
	keys, err := st.Keys(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if resource != "" && !sameResource(k.Resource, resource) {
			continue
		}
		if err := st.Delete(ctx, k); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
