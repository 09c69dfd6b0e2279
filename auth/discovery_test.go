package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// metadataServer serves doc (with {url} replaced by its own URL) at path.
func metadataServer(t *testing.T, path, doc string) *httptest.Server {
	t.Helper()
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, strings.ReplaceAll(doc, "{url}", ts.URL))
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestDiscoverIssuer(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, path, issuerPath string }{
		{"RFC 8414", "/.well-known/oauth-authorization-server", ""},
		{"OpenID", "/.well-known/openid-configuration", ""},
		{"RFC 8414 with a path", "/.well-known/oauth-authorization-server/tenant", "/tenant"},
		{"OpenID path-inserted", "/.well-known/openid-configuration/tenant", "/tenant"},
		{"OpenID appended", "/tenant/.well-known/openid-configuration", "/tenant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := metadataServer(t, tc.path, `{"issuer":"{url}`+tc.issuerPath+`","jwks_uri":"{url}/keys"}`)
			m, err := DiscoverIssuer(ctx, ts.Client(), ts.URL+tc.issuerPath)
			if err != nil || m.JWKSURI != ts.URL+"/keys" || m.URL != ts.URL+tc.path {
				t.Fatalf("%+v %v", m, err)
			}
		})
	}
	// A document naming another issuer is refused, as is one without keys.
	ts := metadataServer(t, "/.well-known/oauth-authorization-server", `{"issuer":"{url}/other","jwks_uri":"{url}/keys"}`)
	if _, err := DiscoverIssuer(ctx, ts.Client(), ts.URL); !errors.Is(err, ErrIssuerMetadata) || !strings.Contains(err.Error(), "names issuer") {
		t.Fatalf("other issuer: %v", err)
	}
	ts = metadataServer(t, "/.well-known/oauth-authorization-server", `{"issuer":"{url}"}`)
	if _, err := DiscoverIssuer(ctx, ts.Client(), ts.URL); !errors.Is(err, ErrIssuerMetadata) || !strings.Contains(err.Error(), "has no jwks_uri") {
		t.Fatalf("no jwks_uri: %v", err)
	}
	// A jwks_uri over plain http on a public host is refused.
	ts = metadataServer(t, "/.well-known/oauth-authorization-server", `{"issuer":"{url}","jwks_uri":"http://keys.example.com/jwks"}`)
	if _, err := DiscoverIssuer(ctx, ts.Client(), ts.URL); !errors.Is(err, ErrIssuerMetadata) || !strings.Contains(err.Error(), "only on a loopback") {
		t.Fatalf("http jwks_uri: %v", err)
	}
	// Oversize documents are refused.
	big := metadataServer(t, "/.well-known/oauth-authorization-server", `{"issuer":"{url}","jwks_uri":"{url}/keys","x":"`+strings.Repeat("a", DefaultMetadataMaxBytes)+`"}`)
	if _, err := DiscoverIssuer(ctx, big.Client(), big.URL); !errors.Is(err, ErrIssuerMetadata) || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("oversize: %v", err)
	}
	// Nothing served: an error naming the issuer.
	if _, err := DiscoverIssuer(ctx, big.Client(), big.URL+"/nothing"); !errors.Is(err, ErrIssuerMetadata) {
		t.Fatalf("nothing: %v", err)
	}
}

func TestDiscoverIssuerRefusesInsecureIssuers(t *testing.T) {
	for _, iss := range []string{"http://as.example.com", "http://10.0.0.1:8080", "ftp://as.example.com", "https://as.example.com?x=1", "https://u@as.example.com", "as.example.com", ""} {
		if _, err := DiscoverIssuer(context.Background(), nil, iss); !errors.Is(err, ErrIssuerMetadata) {
			t.Errorf("%q: %v", iss, err)
		}
	}
	for _, h := range []string{"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1"} {
		if !IsLoopbackHost(h) {
			t.Errorf("%q is loopback", h)
		}
	}
	for _, h := range []string{"localhost.example.com", "10.0.0.1", "0.0.0.0", "::", "example.com"} {
		if IsLoopbackHost(h) {
			t.Errorf("%q is not loopback", h)
		}
	}
}
