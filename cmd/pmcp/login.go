package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gopmcp/pmcp/oauthclient"
)

// login runs `pmcp login --url URL`: it forgets what is stored for the
// server, connects with a browser login forced (authorization code with
// PKCE and a loopback redirect, RFC 8252), and reports where the
// credentials went. No token is ever printed.
func login(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	v, a := clientVerb("login")
	pos, tail, code, done := v.start(args, stdout, stderr)
	if done {
		return code
	}
	err := a.finish(v, pos, tail)
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("unexpected argument %q", pos[0])
	}
	if err == nil && a.url == "" {
		err = errors.New("login needs --url URL (a Streamable HTTP endpoint)")
	}
	if err == nil && a.auth.noAuth {
		err = errors.New("--no-auth makes no sense with login")
	}
	if err != nil {
		return v.usageError(stderr, err)
	}
	if !a.timeoutSet {
		a.timeout = defaultLoginTimeout
	}
	a.auth.login = true
	defer a.auth.close()
	st, err := a.auth.store()
	if err != nil {
		fmt.Fprintf(stderr, "pmcp login: %s\n", errText(err))
		return exitError
	}
	// A fresh start: a registration stored by an earlier run names that
	// run's redirect URI (another port), which a strict authorization
	// server would refuse.
	if _, err := forget(ctx, st, a.url); err != nil {
		fmt.Fprintf(stderr, "pmcp login: %s\n", errText(err))
		return exitError
	}
	errw := &syncWriter{w: stderr}
	var keys []oauthclient.TokenKey
	in := &interaction{errw: errw, stop: make(chan struct{})}
	defer in.close()
	s, _, err := connect(ctx, a, in, errw)
	if err != nil {
		if msg, ok := authFailure(err, a); ok {
			err = msg
		}
		fmt.Fprintf(errw, "pmcp login: %s\n", errText(err))
		return exitConn
	}
	_ = s.Close()
	// The session saved through its own store instance; read the file anew.
	if st, err = a.auth.store(); err == nil {
		keys, err = st.Keys(ctx)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pmcp login: %s\n", errText(err))
		return exitError
	}
	path, _ := a.auth.tokenStorePath()
	for _, k := range keys {
		if !sameResource(k.Resource, a.url) {
			continue
		}
		if c, err := st.Load(ctx, k); err == nil && c != nil && c.AccessToken != "" {
			fmt.Fprintf(stdout, "Signed in to %s (authorization server %s); credentials stored in %s\n", k.Resource, k.Issuer, path)
			return exitOK
		}
	}
	fmt.Fprintf(stdout, "%s did not ask for authorization; nothing stored\n", a.url)
	return exitOK
}

// logout runs `pmcp logout [--url URL]`: it deletes the stored
// credentials of that server (at every authorization server), or of every
// server without --url.
func logoutVerb() (*verb, *authArgs, *string) {
	v := newVerb("logout", "pmcp logout [--url URL] [flags]", "Delete the stored OAuth credentials of the server at URL (at every\nauthorization server), or of every server without --url.")
	var a authArgs
	var url string
	v.fs.StringVar(&url, "url", "", "the server whose credentials to delete (default: all)")
	a.registerStore(v.fs)
	return v, &a, &url
}

func logout(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	v, a, urlp := logoutVerb()
	pos, tail, code, done := v.start(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 || tail != nil {
		return v.usageError(stderr, fmt.Errorf("unexpected argument %q", append(pos, tail...)))
	}
	url := *urlp
	st, err := a.store()
	if err == nil {
		var n int
		if n, err = forget(ctx, st, url); err == nil {
			switch {
			case url != "":
				fmt.Fprintf(stdout, "Removed %d stored credential(s) for %s\n", n, url)
			default:
				fmt.Fprintf(stdout, "Removed %d stored credential(s)\n", n)
			}
			return exitOK
		}
	}
	fmt.Fprintf(stderr, "pmcp logout: %s\n", errText(err))
	return exitError
}
