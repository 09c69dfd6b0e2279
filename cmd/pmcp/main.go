// Command pmcp runs the pmcp everything server and talks to MCP servers
// as a client.
//
//	pmcp serve --stdio        serve MCP over stdin/stdout (both eras)
//	pmcp serve [--http ADDR]  serve MCP over streamable HTTP
//	pmcp bridge [--listen ADDR] (--url URL | -- CMD ARGS...)  bridge another server
//	pmcp gateway --listen ADDR --config FILE   policies, rate limits, audit over bridged servers
//	pmcp inspect --url URL    describe a server (or: pmcp inspect -- CMD ARGS...)
//	pmcp tools|resources|prompts list ...
//	pmcp call TOOL key=value ...
//	pmcp read URI
//	pmcp get PROMPT key=value ...
//	pmcp login --url URL      sign in with OAuth (browser, loopback redirect)
//	pmcp logout [--url URL]   forget stored credentials
//	pmcp doctor URL           check the way to a server (or: pmcp doctor -- CMD ARGS...)
//	pmcp version              module version, git revision, Go and protocol versions
//
// Run "pmcp help" for the flags and the exit codes.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes (exitConn, 3, is in client.go); documented in usage.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdin, stdout, stderr)
	case "bridge":
		return bridge(ctx, args[1:], stdin, stdout, stderr)
	case "gateway":
		return gatewayCmd(ctx, args[1:], stdout, stderr)
	case "inspect", "tools", "resources", "prompts", "call", "read", "get":
		return clientCommand(ctx, args[0], args[1:], stdin, stdout, stderr)
	case "shell":
		return shell(ctx, args[1:], stdin, stdout, stderr)
	case "login":
		return login(ctx, args[1:], stdout, stderr)
	case "logout":
		return logout(ctx, args[1:], stdout, stderr)
	case "doctor":
		return doctor(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		return version(args[1:], stdout, stderr)
	case "help":
		return help(args[1:], stdout, stderr)
	case "-h", "--help":
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "pmcp: %s\n", unknownCommand(args[0]))
	return exitUsage
}

// commandNames are the commands run dispatches (TestCommandsDispatch
// holds them to it): what "did you mean" draws from.
var commandNames = []string{"serve", "bridge", "gateway", "inspect", "tools", "resources", "prompts", "call", "read", "get",
	"shell", "login", "logout", "doctor", "version", "help"}

// unknownCommand says name is no command, and which one is close to it.
func unknownCommand(name string) string {
	if s := didYouMean(name, commandNames); s != "" {
		return fmt.Sprintf("unknown command %q: %s (pmcp help lists them)", name, s)
	}
	return fmt.Sprintf("unknown command %q (pmcp help lists them)", name)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: pmcp <command> [flags]

server:
  serve                      run the everything server (streamable HTTP by
                             default, --stdio for stdio); "pmcp serve -h"
  bridge                     serve other MCP servers (a child process or a
                             URL) over stdio or HTTP, in both eras;
                             "pmcp bridge -h"
  gateway                    serve the upstreams of a configuration file
                             on one HTTP endpoint with OAuth, per-caller
                             policies, rate limits and audit; "pmcp gateway -h"

client (talk to any MCP server; the protocol era is negotiated):
  inspect                    server info, era, capabilities, and the tool,
                             resource and prompt lists
  tools list                 list the tools
  resources list             list the resources and resource templates
  prompts list               list the prompts
  call TOOL [key=value ...]  call a tool; a value is read as JSON when it
                             parses (42, true, null, {"a":1}, "quoted"),
                             else as a plain string. Or give the arguments
                             as one JSON object: call TOOL '{"a":1}'
  read URI                   read a resource
  get PROMPT [key=value ...] render a prompt (values are strings)
  shell                      an interactive session: call tools at a prompt
                             with history and tab completion of tool names

authorization (OAuth 2.1; Streamable HTTP servers only):
  login --url URL            sign in: opens the authorization page in a
                             browser ($BROWSER, else xdg-open/open; "none"
                             only prints the URL), takes the redirect on a
                             loopback port, stores the tokens (never shown)
  logout [--url URL]         delete the stored credentials of URL, or all
  --client-id ID             a client registered beforehand with the
  --client-secret SECRET     authorization server (else one is registered)
  --client-metadata-url URL  the client's metadata document (https), used
                             where the server supports client ID metadata
  --token-store PATH         credentials file (mode 0600; default
                             $PMCP_TOKEN_STORE, else <config dir>/pmcp/tokens.json)
  --login                    on a 401, sign in even without a terminal
                             (on a terminal that is the default)
  --no-auth                  never use OAuth
Stored tokens are used and refreshed by every client command.

Every client command needs a server, either
  --url URL                  a Streamable HTTP endpoint (http://host:port/mcp)
or, last on the line,
  -- COMMAND ARGS...         a server started as a child process (stdio)

client flags (anywhere before --):
  --json                     print results as JSON (for scripts)
  --header 'Name: value'     add an HTTP header (repeatable; -H)
  --era auto|modern|legacy   force the protocol era (default auto)
  --timeout DURATION         bound connecting and each request (default 60s)
  --no-progress              do not show progress on stderr
  --elicit-json '{...}'      answer the server's forms without a terminal
                             (repeatable, or '[{...},{...}]': one per form)
  --sampling-cmd CMD         answer sampling: CMD reads the request JSON on
                             stdin and prints the result JSON
  --task                     call: run the tool as a task; show its status live

other:
  doctor URL                 check the way to a server step by step (DNS,
                             TCP, TLS, HTTP, Host, eras, OAuth metadata, the
                             stored token, clock), each a PASS/FAIL/SKIP line
                             with the fix; or doctor -- COMMAND ARGS...
  version [--json]           pmcp's module version, the git revision it was
                             built from, the Go version and the protocol
                             versions it speaks (also --version)

every command:
  --log-level LEVEL          what is shown on stderr: off, debug, info,
                             notice, warning, error ... emergency (default
                             info): diagnostics; for serve also the access
                             log (for bridge at debug); for client commands
                             also the server's log records
  -h, --help                 the command's usage ("pmcp help COMMAND" too)

Progress of calls, the server's log records and elicitation prompts go to
stderr; results to stdout. On a terminal, call asks for what the server
elicits (each form field; a URL to open) on stdin.

exit codes:
  0  success
  1  the server answered with an error, or the tool reported one (isError)
  2  usage error
  3  connection or protocol failure (server unreachable, negotiation or
     transport failed, malformed answers)

examples:
  pmcp inspect --url http://127.0.0.1:8080/mcp
  pmcp inspect -- go run ./cmd/pmcp serve --stdio
  pmcp call --url http://127.0.0.1:8080/mcp add a=1 b=2
  pmcp tools list --json -- ./my-server --stdio
`)
}
