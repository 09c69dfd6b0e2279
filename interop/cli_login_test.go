package interop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp/oauthclient"
)

// browserUserEnv makes the test binary a browser (TestMain): it signs in
// at the provider's login page as that user and follows the redirect to
// the CLI's loopback listener.
const browserUserEnv = "PMCP_INTEROP_BROWSER_USER"

func browse(user, authURL string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	back, err := acLogin(user)(ctx, authURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, back, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "browser: the loopback redirect answered", resp.Status)
		return 1
	}
	return 0
}

// The pmcp command line against the zitadel/oidc provider and pmcp's
// resource server: `pmcp login` with a pre-registered client
// (--client-id/--client-secret; the provider has no dynamic registration)
// opens the "browser" (this test binary, signing in as alice), takes the
// redirect on its loopback listener at a port the provider never saw
// registered (RFC 8252 §7.3) and stores the tokens; `pmcp call` then
// works from the stored tokens, refreshes them after they expire,
// refuses to start a login without a terminal when a step-up is needed,
// steps up with --login; no output ever shows a token; logout forgets.
func TestCLILoginAgainstZitadel(t *testing.T) {
	dir := t.TempDir()
	bin := pmcpBinary(t)
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	resource := rs.URL + "/mcp"
	st, err := newCCStorage(&ccClient{id: "mcp-cli", secret: "mcp-cli-secret", scopes: []string{"mcp:tools", "mcp:deploy"},
		redirects: []string{"http://127.0.0.1/callback"}})
	if err != nil {
		t.Fatal(err)
	}
	issuer := startACProvider(t, st)
	_, deploys := startProtectedRS(t, mux, resource, st, issuer)
	store := filepath.Join(dir, "tokens.json")

	var outputs strings.Builder
	pm := func(args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		args = append(args, "--url", resource, "--token-store", store)
		if args[0] != "logout" {
			args = append(args, "--client-id", "mcp-cli", "--client-secret", "mcp-cli-secret")
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "BROWSER="+os.Args[0], browserUserEnv+"=alice")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		outputs.WriteString(out.String() + errb.String())
		return code, out.String(), errb.String()
	}

	code, out, errs := pm("login")
	if code != 0 || !strings.Contains(out, "Signed in to "+resource+" (authorization server "+issuer+")") {
		t.Fatalf("login: %d\n%s\n%s", code, out, errs)
	}
	if fi, err := os.Stat(store); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token store: %v %v", fi, err)
	}
	for _, era := range []string{"modern", "legacy"} {
		code, out, errs = pm("call", "whoami", "--era", era)
		if code != 0 || !strings.Contains(out, "alice mcp:tools") {
			t.Fatalf("call whoami (%s): %d\n%s\n%s", era, code, out, errs)
		}
	}

	// Expired: the next command refreshes, nobody signs in.
	refreshes := st.refreshGrants.Load()
	st.clock.Add(int64(10 * time.Minute))
	if code, out, errs = pm("call", "whoami"); code != 0 || !strings.Contains(out, "alice") {
		t.Fatalf("after expiry: %d\n%s\n%s", code, out, errs)
	}
	if got := st.refreshGrants.Load(); got != refreshes+1 {
		t.Fatalf("%d refresh grants, want %d", got, refreshes+1)
	}
	if strings.Contains(errs, "authorization needed") {
		t.Fatalf("a refresh started a login:\n%s", errs)
	}

	// Step-up without a terminal: refused with the way out; with --login,
	// the browser signs in again for the union of scopes.
	if code, _, errs = pm("call", "deploy"); code != 3 || !strings.Contains(errs, "pmcp login") || deploys.Load() != 0 {
		t.Fatalf("step-up without a terminal: %d\n%s", code, errs)
	}
	if code, out, errs = pm("call", "deploy", "--login"); code != 0 || !strings.Contains(out, "deployed by alice") {
		t.Fatalf("step-up with --login: %d\n%s\n%s", code, out, errs)
	}

	// No output shows a token; the store holds them.
	fs := oauthclient.NewFileTokenStore(store)
	creds, err := fs.Load(context.Background(), oauthclient.TokenKey{Resource: resource, Issuer: issuer})
	if err != nil || creds == nil || creds.AccessToken == "" || creds.RefreshToken == "" {
		t.Fatalf("stored credentials: %v", err)
	}
	for _, secret := range []string{creds.AccessToken.Reveal(), creds.RefreshToken.Reveal(), "mcp-cli-secret"} {
		if strings.Contains(outputs.String(), secret) {
			t.Fatalf("a secret was printed:\n%s", outputs.String())
		}
	}

	if code, out, _ = pm("logout"); code != 0 || !strings.Contains(out, "Removed 1 stored credential(s)") {
		t.Fatalf("logout: %d %s", code, out)
	}
	if code, _, errs = pm("call", "whoami"); code != 3 || !strings.Contains(errs, "pmcp login") {
		t.Fatalf("after logout: %d\n%s", code, errs)
	}
}
