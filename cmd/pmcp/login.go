package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gopmcp/pmcp"
)

// login runs `pmcp login --url URL`: it forgets what is stored for the
// server, connects with a browser login forced (authorization code with
// PKCE and a loopback redirect, RFC 8252), and reports where the
// credentials went. No token is ever printed.
func login(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a, err := parseClientArgs(args)
	if errors.Is(err, errHelp) {
		usage(stdout)
		return exitOK
	}
	if err == nil && a.url == "" {
		err = errors.New("login needs --url URL (a Streamable HTTP endpoint)")
	}
	if err == nil && a.auth.noAuth {
		err = errors.New("--no-auth makes no sense with login")
	}
	if err != nil {
		fmt.Fprintf(stderr, "pmcp login: %v\n", err)
		return exitUsage
	}
	if !a.timeoutSet {
		a.timeout = defaultLoginTimeout
	}
	a.auth.login = true
	defer a.auth.close()
	st, err := a.auth.store()
	if err != nil {
		fmt.Fprintf(stderr, "pmcp login: %v\n", err)
		return exitError
	}
	// A fresh start: a registration stored by an earlier run names that
	// run's redirect URI (another port), which a strict authorization
	// server would refuse.
	if _, err := forget(ctx, st, a.url); err != nil {
		fmt.Fprintf(stderr, "pmcp login: %v\n", err)
		return exitError
	}
	errw := &syncWriter{w: stderr}
	var keys []pmcp.TokenKey
	in := &interaction{errw: errw, stop: make(chan struct{})}
	defer in.close()
	s, err := connect(ctx, a, in, errw)
	if err != nil {
		fmt.Fprintf(errw, "pmcp login: %v\n", err)
		return exitConn
	}
	_ = s.Close()
	// The session saved through its own store instance; read the file anew.
	if st, err = a.auth.store(); err == nil {
		keys, err = st.Keys(ctx)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pmcp login: %v\n", err)
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
func logout(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var a authArgs
	var url string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, val, hasVal := cutFlag(arg)
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag %s needs a value", arg)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "":
			err = fmt.Errorf("unexpected argument %q", arg)
		case "url":
			url, err = value()
		case "token-store":
			a.storePath, err = value()
		case "h", "help":
			usage(stdout)
			return exitOK
		default:
			err = fmt.Errorf("unknown flag %s", arg)
		}
		if err != nil {
			fmt.Fprintf(stderr, "pmcp logout: %v\n", err)
			return exitUsage
		}
	}
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
	fmt.Fprintf(stderr, "pmcp logout: %v\n", err)
	return exitError
}

// cutFlag splits "--name=value" or "-name"; name is empty for an argument
// that is not a flag.
func cutFlag(arg string) (name, val string, hasVal bool) {
	if len(arg) < 2 || arg[0] != '-' {
		return "", "", false
	}
	for len(arg) > 0 && arg[0] == '-' {
		arg = arg[1:]
	}
	return strings.Cut(arg, "=")
}
