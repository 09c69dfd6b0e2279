package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/gopmcp/pmcp"
)

// TokenKey identifies what an OAuth client holds credentials for: the
// protected resource (the MCP server's canonical URI) and the issuer of the
// authorization server. Credentials are bound to the issuer (SEP-2352):
// when a server moves to another authorization server the key changes, so
// nothing obtained from the old one is presented to the new one.
type TokenKey struct {
	Resource string
	Issuer   string
}

// Credentials is what a TokenStore keeps per TokenKey: the client
// registration at that authorization server and the tokens it issued.
// Secrets print as "[REDACTED]" in every encoding (see pmcp.Secret).
type Credentials struct {
	// ClientID and ClientSecret are the client's registration at the
	// issuer (pre-registered, a Client ID Metadata Document URL, or
	// dynamically registered). ClientSecret is empty for public clients.
	ClientID     string
	ClientSecret pmcp.Secret
	// TokenEndpointAuthMethod is how the client authenticates at the token
	// endpoint: "none", "client_secret_basic", "client_secret_post" or
	// "private_key_jwt".
	TokenEndpointAuthMethod string

	AccessToken pmcp.Secret
	// TokenType is "Bearer" or "DPoP".
	TokenType    string
	RefreshToken pmcp.Secret
	// Expiry is when AccessToken expires; zero means unknown.
	Expiry time.Time
	// Scopes are the scopes last requested (the base of the union a
	// step-up asks for).
	Scopes []string
}

func (c *Credentials) clone() *Credentials {
	if c == nil {
		return nil
	}
	d := *c
	d.Scopes = slices.Clone(c.Scopes)
	return &d
}

// clearTokens forgets the tokens but keeps the client registration.
func (c *Credentials) clearTokens() {
	c.AccessToken, c.RefreshToken, c.TokenType, c.Expiry = "", "", "", time.Time{}
}

// TokenStore keeps OAuth credentials between requests and, for stores that
// persist, between processes. Implementations must be safe for concurrent
// use and must keep what they store confidential (the tokens are bearer
// credentials).
type TokenStore interface {
	// Load returns the credentials stored for key, or nil and no error
	// when there are none.
	Load(ctx context.Context, key TokenKey) (*Credentials, error)
	// Save replaces the credentials stored for key.
	Save(ctx context.Context, key TokenKey, c *Credentials) error
	// Delete forgets the credentials stored for key.
	Delete(ctx context.Context, key TokenKey) error
}

// defaultTokenStoreEntries caps the entries of a MemoryTokenStore (and of
// a FileTokenStore) when its limit is zero; their godoc states the value.
// When the store is full, saving a new key evicts the entry saved longest
// ago.
const defaultTokenStoreEntries = 1024

// MemoryTokenStore is a TokenStore in memory. The zero value works.
type MemoryTokenStore struct {
	// MaxEntries caps the entries; zero means 1024. When the store is
	// full, saving a new key evicts the entry saved longest ago.
	MaxEntries int

	mu      sync.Mutex
	entries map[TokenKey]*Credentials
	order   []TokenKey // save order, oldest first
}

// Load implements TokenStore.
func (s *MemoryTokenStore) Load(_ context.Context, key TokenKey) (*Credentials, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[key].clone(), nil
}

// Save implements TokenStore.
func (s *MemoryTokenStore) Save(_ context.Context, key TokenKey, c *Credentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(key, c.clone())
	return nil
}

func (s *MemoryTokenStore) put(key TokenKey, c *Credentials) {
	if s.entries == nil {
		s.entries = make(map[TokenKey]*Credentials)
	}
	max := s.MaxEntries
	if max <= 0 {
		max = defaultTokenStoreEntries
	}
	if _, ok := s.entries[key]; ok {
		s.order = slices.DeleteFunc(s.order, func(k TokenKey) bool { return k == key })
	}
	for len(s.order) >= max {
		delete(s.entries, s.order[0])
		s.order = s.order[1:]
	}
	s.entries[key] = c
	s.order = append(s.order, key)
}

// Delete implements TokenStore.
func (s *MemoryTokenStore) Delete(_ context.Context, key TokenKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
	s.order = slices.DeleteFunc(s.order, func(k TokenKey) bool { return k == key })
	return nil
}

// FileTokenStore is a TokenStore kept in one JSON file, readable and
// writable by the owner only (mode 0600; the file is replaced atomically
// on every change). It suits one process at a time, such as a CLI. It
// keeps at most 1024 entries: when it is full, saving a new key evicts
// the entry saved longest ago.
type FileTokenStore struct {
	path string
	mu   sync.Mutex
	mem  MemoryTokenStore
	read bool
}

// NewFileTokenStore returns a store kept in the file at path (created on
// the first Save). Its directory must exist.
func NewFileTokenStore(path string) *FileTokenStore {
	return &FileTokenStore{path: path}
}

// fileEntry is the on-disk form; secrets are revealed only here.
type fileEntry struct {
	Resource                string    `json:"resource"`
	Issuer                  string    `json:"issuer"`
	ClientID                string    `json:"client_id,omitempty"`
	ClientSecret            string    `json:"client_secret,omitempty"`
	TokenEndpointAuthMethod string    `json:"token_endpoint_auth_method,omitempty"`
	AccessToken             string    `json:"access_token,omitempty"`
	TokenType               string    `json:"token_type,omitempty"`
	RefreshToken            string    `json:"refresh_token,omitempty"`
	Expiry                  time.Time `json:"expiry,omitzero"`
	Scopes                  []string  `json:"scopes,omitempty"`
}

// fileStoreMaxBytes caps the file a FileTokenStore reads.
const fileStoreMaxBytes = 8 << 20

func (s *FileTokenStore) load() error {
	if s.read {
		return nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		s.read = true
		return nil
	}
	if err != nil {
		return err
	}
	if len(b) > fileStoreMaxBytes {
		return fmt.Errorf("pmcp: token store %s is larger than %d bytes", s.path, fileStoreMaxBytes)
	}
	var entries []fileEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return fmt.Errorf("pmcp: token store %s: %w", s.path, err)
	}
	for _, e := range entries {
		s.mem.put(TokenKey{e.Resource, e.Issuer}, &Credentials{
			ClientID: e.ClientID, ClientSecret: pmcp.Secret(e.ClientSecret), TokenEndpointAuthMethod: e.TokenEndpointAuthMethod,
			AccessToken: pmcp.Secret(e.AccessToken), TokenType: e.TokenType, RefreshToken: pmcp.Secret(e.RefreshToken),
			Expiry: e.Expiry, Scopes: e.Scopes,
		})
	}
	s.read = true
	return nil
}

func (s *FileTokenStore) flush() error {
	entries := make([]fileEntry, 0, len(s.mem.order))
	for _, k := range s.mem.order {
		c := s.mem.entries[k]
		entries = append(entries, fileEntry{
			Resource: k.Resource, Issuer: k.Issuer,
			ClientID: c.ClientID, ClientSecret: c.ClientSecret.Reveal(), TokenEndpointAuthMethod: c.TokenEndpointAuthMethod,
			AccessToken: c.AccessToken.Reveal(), TokenType: c.TokenType, RefreshToken: c.RefreshToken.Reveal(),
			Expiry: c.Expiry, Scopes: c.Scopes,
		})
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(s.path), ".pmcp-tokens-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

// Load implements TokenStore.
func (s *FileTokenStore) Load(ctx context.Context, key TokenKey) (*Credentials, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, err
	}
	return s.mem.Load(ctx, key)
}

// Save implements TokenStore.
func (s *FileTokenStore) Save(_ context.Context, key TokenKey, c *Credentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return err
	}
	s.mem.put(key, c.clone())
	return s.flush()
}

// Delete implements TokenStore.
func (s *FileTokenStore) Delete(ctx context.Context, key TokenKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return err
	}
	_ = s.mem.Delete(ctx, key)
	return s.flush()
}

// Keys returns the keys the store holds credentials for, oldest saved
// first; the CLI's logout uses it to forget one server's credentials at
// every issuer.
func (s *MemoryTokenStore) Keys(context.Context) ([]TokenKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order), nil
}

// Keys returns the keys the store holds credentials for, oldest saved
// first.
func (s *FileTokenStore) Keys(ctx context.Context) ([]TokenKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, err
	}
	return s.mem.Keys(ctx)
}
