package main

import (
	"errors"
	"fmt"

	"github.com/gopmcp/pmcp"
	"github.com/gopmcp/pmcp/oauthclient"
)

// authFailure words a refusal of the server (401, or 403 when no token
// with more scopes could be had) in the CLI's terms: what the server
// said, and what to do about it with the CLI's flags. ok is false for
// any other error.
func authFailure(err error, a *clientArgs) (msg error, ok bool) {
	var se *pmcp.HTTPStatusError
	if !errors.As(err, &se) || (se.StatusCode != 401 && se.StatusCode != 403) {
		return nil, false
	}
	said := fmt.Sprintf("HTTP %d", se.StatusCode)
	if code, desc := se.Challenge(); code != "" {
		said += ": " + code
		if desc != "" {
			said += ": " + sanitize(desc)
		}
	}
	login := "pmcp login --url " + a.url
	switch {
	case a.headers.Get("Authorization") != "":
		return fmt.Errorf("the server refused the token given with --header Authorization (%s): give a valid token, or leave the header out and sign in with `%s`", said, login), true
	case a.auth.noAuth:
		return fmt.Errorf("the server requires authorization (%s) and --no-auth is set: leave --no-auth out to sign in (`%s`), or give a token with --header 'Authorization: Bearer TOKEN'", said, login), true
	case !a.auth.interactive():
		// No browser sign-in without a terminal: whatever the flow
		// tried, the user has to sign in first.
		return fmt.Errorf("the server requires authorization (%s): run `%s`, or add --login", said, login), true
	case errors.Is(err, oauthclient.ErrNoRegistration):
		return fmt.Errorf("the server requires authorization (%s) and its authorization server registers no clients: give --client-id ID of a client registered with it beforehand", said), true
	}
	return nil, false
}
