package pmcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestClientHTTPAuthorizationOneOriginRule: explaining a 401 without an
// authorizer reads the protected resource metadata by the rule of the
// OAuth flow (oauth.DiscoverProtectedResource): the challenge's
// resource_metadata URL is used when it is of the endpoint's origin or
// https on another origin (it was used only from the endpoint's origin),
// never plain http on another origin; HTTPClientOptions.Header goes only
// to the endpoint's origin.
func TestClientHTTPAuthorizationOneOriginRule(t *testing.T) {
	var mu sync.Mutex
	keys := map[string]string{} // server -> X-Api-Key of the last metadata request
	prm := func(name, as string, resource *string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			keys[name] = r.Header.Get("X-Api-Key")
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q]}`, *resource, as)
		}
	}
	var resource, challenge string
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+challenge+`"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	mux.HandleFunc("/prm", prm("mcp", "https://as-same.example", &resource))
	mcp := httptest.NewServer(mux)
	defer mcp.Close()
	other := httptest.NewServer(prm("other", "https://as-http.example", &resource))
	defer other.Close()
	tlsOther := httptest.NewTLSServer(prm("tls", "https://as-tls.example", &resource))
	defer tlsOther.Close()
	resource = mcp.URL + "/mcp"

	for _, tc := range []struct {
		name, challenge, want string
		wantKey               map[string]string
	}{
		{"same origin", mcp.URL + "/prm", "https://as-same.example", map[string]string{"mcp": "k"}},
		{"another https origin", tlsOther.URL + "/prm", "https://as-tls.example", map[string]string{"tls": ""}},
		{"another http origin", other.URL + "/prm", "", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			challenge = tc.challenge
			clear(keys)
			_, err := NewClient(ClientOptions{}).ConnectHTTP(context.Background(), mcp.URL+"/mcp", HTTPClientOptions{
				HTTPClient: tlsOther.Client(),
				Header:     http.Header{"X-Api-Key": {"k"}},
			})
			if !errors.Is(err, ErrAuthorizationRequired) {
				t.Fatalf("err %v, want ErrAuthorizationRequired", err)
			}
			if tc.want != "" && !strings.Contains(err.Error(), tc.want) || tc.want == "" && strings.Contains(err.Error(), "authorization servers") {
				t.Errorf("err %v, want the authorization server %q", err, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(keys) != fmt.Sprint(tc.wantKey) {
				t.Errorf("metadata requests (server: X-Api-Key) %v, want %v", keys, tc.wantKey)
			}
		})
	}
}
