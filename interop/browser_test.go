package interop

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser tests (issue 21, item 5): the official MCP Inspector's web
// UI, in headless Chromium driven over the DevTools protocol, renders MCP
// Apps views served by pmcp, and the views' calls back to their server
// go through the Inspector to pmcp and back into the page.
//
// Chromium is Debian's package (scripts/test.sh installs it), found as
// $PMCP_CHROMIUM or `chromium` on PATH; node and the Inspector come from
// the same npm install as the third-party matrix (thirdPartyNPM). Missing
// any of them skips the tests locally and fails them under CI=true.
const (
	envChromium       = "PMCP_CHROMIUM"
	inspectorWebMain  = "clients/web/build/index.js" // the Inspector's web UI server
	browserTimeout    = 90 * time.Second             // one page, from navigation to the view's answer
	inspectorStartup  = 60 * time.Second             // until the Inspector prints its URL
	inspectorStopWait = 10 * time.Second
)

// screenshotFlag, when set, writes the Inspector's screenshot to the
// README's image (go test -run TestBrowserInspectorApp/legacy
// -apps-screenshot ../docs/img/apps-inspector.png); otherwise the
// screenshot goes to a temporary directory and is only checked.
var screenshotFlag = flag.String("apps-screenshot", "", "write the Inspector screenshot of the everything server's app to this file")

// browserEnv returns Chromium's path and the npm programs, or skips (fails
// under CI=true) when one is missing.
func browserEnv(t *testing.T) (string, npmEnv) {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if ci {
			t.Fatalf("CI=true but %s (scripts/test.sh installs Debian chromium and the npm programs)", msg)
		}
		t.Skipf("%s (scripts/test.sh installs it): skipping the browser test", msg)
	}
	chromium := os.Getenv(envChromium)
	if chromium == "" {
		p, err := exec.LookPath("chromium")
		if err != nil {
			missing("no chromium on PATH and %s is not set", envChromium)
		}
		chromium = p
	}
	npm := npmEnv{node: os.Getenv(envNode), clients: os.Getenv(envClients)}
	if npm.node == "" || npm.clients == "" {
		missing("%s or %s is not set", envNode, envClients)
	}
	if _, err := os.Stat(filepath.Join(npm.clients, "node_modules", "@modelcontextprotocol", "inspector", inspectorWebMain)); err != nil {
		t.Fatalf("%s: %v", envClients, err)
	}
	return chromium, npm
}

// freePorts returns n distinct free loopback ports. Another process may
// take one before the Inspector binds it: startInspector then tries again.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// An inspector is a running Inspector web UI.
type inspector struct {
	base  string // http://127.0.0.1:PORT
	token string // its API token: the deep link's autoConnect and autoOpen
	logs  *tailBuffer
}

var inspectorURL = regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/?\?MCP_INSPECTOR_API_TOKEN=([0-9a-f]+)`)

// startInspector runs the Inspector's web UI on free loopback ports,
// configured for serverURL in the given era (legacy or modern), until the
// test ends.
func startInspector(t *testing.T, npm npmEnv, serverURL, era string) *inspector {
	t.Helper()
	var errs []error
	for range 3 {
		in, err := tryInspector(t, npm, serverURL, era)
		if err == nil {
			return in
		}
		errs = append(errs, err)
	}
	t.Fatalf("the Inspector web UI did not start: %v", errors.Join(errs...))
	return nil
}

func tryInspector(t *testing.T, npm npmEnv, serverURL, era string) (*inspector, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	storage := t.TempDir()
	// A writable catalog that already holds the deep link's server
	// ("deep-link", the id the Inspector gives it) with the era: the deep
	// link then connects to it as it is. (--server-url with --protocol-era
	// makes a read-only session, where the deep link cannot add its
	// server.)
	catalog, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"deep-link": map[string]any{"type": "streamable-http", "url": serverURL, "protocolEra": era},
	}})
	if err != nil {
		return nil, err
	}
	catalogPath := filepath.Join(storage, "mcp.json")
	if err := os.WriteFile(catalogPath, catalog, 0o600); err != nil {
		return nil, err
	}
	main := filepath.Join(npm.clients, "node_modules", "@modelcontextprotocol", "inspector", inspectorWebMain)
	cmd := exec.Command(npm.node, main, "--catalog", catalogPath)
	cmd.Env = append(os.Environ(),
		"HOST=127.0.0.1",
		"CLIENT_PORT="+strconv.Itoa(ports[0]),
		"SERVER_PORT="+strconv.Itoa(ports[1]),
		"MCP_SANDBOX_PORT="+strconv.Itoa(ports[2]),
		"MCP_APP_ORIGIN_PORT="+strconv.Itoa(ports[3]),
		"MCP_AUTO_OPEN_ENABLED=false",
		"MCP_INSPECTOR_SECRET_STORE=memory",
		"MCP_STORAGE_DIR="+storage,
		"HOME="+storage,
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logs := &tailBuffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan *inspector, 1)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(logs, sc.Text())
			if m := inspectorURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- &inspector{base: m[1], token: m[2], logs: logs}:
				default:
				}
			}
		}
	}()
	exited := make(chan struct{})
	var werr error
	go func() {
		defer close(exited)
		<-read
		werr = cmd.Wait()
	}()
	stop := func() {
		// The process group: node and anything it started.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(inspectorStopWait):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	timer := time.NewTimer(inspectorStartup)
	defer timer.Stop()
	select {
	case in := <-found:
		t.Cleanup(stop)
		return in, nil
	case <-exited:
		return nil, fmt.Errorf("it exited before serving: %v\n%s", werr, logs)
	case <-timer.C:
		stop()
		return nil, fmt.Errorf("no URL within %v; its output:\n%s", inspectorStartup, logs)
	}
}

// appLink is the Inspector's deep link that connects to serverURL, opens
// the Apps tab on tool and, since autoOpen carries the token, opens the
// app with args without a click ("Reviewing an MCP App" in the
// Inspector's documentation).
func (in *inspector) appLink(serverURL, tool string, args map[string]any) (string, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	q := url.Values{
		"MCP_INSPECTOR_API_TOKEN": {in.token},
		"serverUrl":               {serverURL},
		"transport":               {"http"},
		"autoConnect":             {in.token},
		"autoOpen":                {in.token},
		"openApp":                 {tool},
		"appArgs":                 {base64.RawURLEncoding.EncodeToString(b)},
	}
	return in.base + "/?" + q.Encode(), nil
}

// A browser is one headless Chromium with one tab, closed when the test
// ends. console collects the page's console messages and uncaught
// exceptions (every frame's) for failure messages.
type browser struct {
	ctx     context.Context
	console *tailBuffer
}

func startBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		// The views run in cross-origin frames (the Inspector's sandbox
		// origin, then an opaque srcdoc frame): with site isolation off
		// they stay in the page's process, so the test reads their DOM
		// through the page's session (DOM.getDocument with pierce).
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,SitePerProcess,IsolateOrigins"),
		chromedp.Flag("disable-site-isolation-trials", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	// Start the browser with no deadline: the first Run binds its life to
	// the context it gets.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting %s: %v", chromium, err)
	}
	console := &tailBuffer{}
	messages := chromedp.Console(ctx)
	read := make(chan struct{})
	go func() {
		defer close(read)
		for m, err := range messages {
			if err != nil {
				return
			}
			fmt.Fprintf(console, "%s %s:%d %s\n", m.Type, m.URL, m.Line+1, m)
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		<-read
		cancelAlloc() // waits for Chromium to exit
	})
	return &browser{ctx: ctx, console: console}
}

// An element is what the test reads of one element of some frame: its
// attributes, its text, and its backend id (to click it).
type element struct {
	attrs   map[string]string
	text    string
	backend cdp.BackendNodeID
}

// frameElement finds the element with the given id in any frame of the
// page (through the frames' content documents), or returns nil.
func frameElement(ctx context.Context, id string) (*element, error) {
	depth, pierce := int64(-1), true
	doc, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{Depth: &depth, Pierce: &pierce})
	if err != nil {
		return nil, err
	}
	var find func(n *cdp.Node) *cdp.Node
	find = func(n *cdp.Node) *cdp.Node {
		if n == nil {
			return nil
		}
		if n.NodeType == int64(chromedp.NodeTypeElement) && nodeAttr(n, "id") == id {
			return n
		}
		if f := find(n.ContentDocument); f != nil {
			return f
		}
		for _, c := range n.Children {
			if f := find(c); f != nil {
				return f
			}
		}
		return nil
	}
	n := find(doc.Root)
	if n == nil {
		return nil, nil
	}
	e := &element{attrs: map[string]string{}, backend: n.BackendNodeID}
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		e.attrs[n.Attributes[i]] = n.Attributes[i+1]
	}
	var sb strings.Builder
	var collect func(n *cdp.Node)
	collect = func(n *cdp.Node) {
		if n.NodeType == int64(chromedp.NodeTypeText) {
			sb.WriteString(n.NodeValue)
		}
		for _, c := range n.Children {
			collect(c)
		}
	}
	collect(n)
	e.text = sb.String()
	return e, nil
}

func nodeAttr(n *cdp.Node, name string) string {
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		if n.Attributes[i] == name {
			return n.Attributes[i+1]
		}
	}
	return ""
}

// pollInterval is how often waitElement reads the page's DOM: the frames
// of a view send no event the test could wait on.
const pollInterval = 250 * time.Millisecond

// waitElement waits (bounded by ctx) until the element with id, in any
// frame, satisfies done, and returns it.
func waitElement(ctx context.Context, id string, done func(e *element) bool) (*element, error) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last *element
	for {
		e, err := frameElement(ctx, id)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if e != nil {
			last = e
			if done(e) {
				return e, nil
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				return nil, fmt.Errorf("#%s: %w (never seen)", id, ctx.Err())
			}
			return last, fmt.Errorf("#%s: %w (last seen: %v %q)", id, ctx.Err(), last.attrs, last.text)
		case <-tick.C:
		}
	}
}

// click clicks e (in whatever frame it is) by calling its click method.
func click(ctx context.Context, e *element) error {
	obj, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: e.backend})
	if err != nil {
		return err
	}
	_, err = chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: "function () { this.click(); }",
		ObjectID:            obj.Object.ObjectID,
	})
	return err
}

// pageState describes what the page shows, for failure messages: the
// Inspector's apps form status and error, the page's text, the console
// and the Inspector's log.
func (b *browser) pageState(in *inspector) string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	type state struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Text   string `json:"text"`
	}
	st, err := chromedp.Run(ctx, chromedp.Evaluate[state](`(function () {
		var f = document.querySelector('[data-testid="apps-form"]');
		return {
			status: f ? String(f.getAttribute('data-app-status')) : '(no apps form)',
			error: f ? String(f.getAttribute('data-app-error') || '') : '',
			text: document.body ? document.body.innerText.slice(0, 3000) : ''
		};
	}())`))
	if err != nil {
		st.Text = "(reading the page: " + err.Error() + ")"
	}
	return fmt.Sprintf("apps form: data-app-status=%q data-app-error=%q\npage text:\n%s\nconsole:\n%s\ninspector log:\n%s", st.Status, st.Error, st.Text, b.console, in.logs)
}
