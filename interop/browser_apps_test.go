package interop

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The Inspector renders the everything server's app (pmcp serve, tool
// show_app) in each era it speaks, over HTTP: the view reaches
// data-app-status="ready", shows the tool's result in that era, and its
// tools/call of the app-only tool app_ping, sent through the Inspector to
// pmcp, comes back into the page.
func TestBrowserInspectorApp(t *testing.T) {
	chromium, npm := browserEnv(t)
	bin := pmcpBinary(t)
	serverURL, serveLogs, err := startHTTP(t, bin, "serve", "--http", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			ctx, fail := openAppInInspector(t, chromium, npm, serverURL, era, "show_app", map[string]any{"name": "browser"}, "pmcp serve", serveLogs)
			cb, err := waitElement(ctx, "callback", func(e *element) bool { return e.attrs["data-call-status"] != "pending" })
			if err != nil || cb.attrs["data-call-status"] != "ok" || !strings.Contains(cb.text, "Server answered app_ping: pong to view") {
				fail("the view's tools/call of app_ping: %v (%+v)", err, cb)
			}
			if e, err := waitElement(ctx, "era", func(e *element) bool { return e.text != "–" }); err != nil || e.text != era {
				fail("the view shows the era as %+v (%v), want %q", e, err, era)
			}
			if e, err := waitElement(ctx, "greeting", func(*element) bool { return true }); err != nil || e.text != "Hello, browser!" {
				fail("the view shows the greeting as %+v (%v): appArgs did not reach show_app", e, err)
			}
			shot := filepath.Join(t.TempDir(), "apps-inspector.png")
			if era == "legacy" && *screenshotFlag != "" {
				shot = *screenshotFlag
			}
			screenshot(t, ctx, shot)
		})
	}
}

// openAppInInspector starts the Inspector (for serverURL, in era) and a
// browser, opens tool's app with args through the deep link and waits
// until it is ready. It returns the page's context (bounded by
// browserTimeout) and a Fatalf that adds what the page showed and the
// server's log (named server).
func openAppInInspector(t *testing.T, chromium string, npm npmEnv, serverURL, era, tool string, args map[string]any, server string, serverLogs *tailBuffer) (context.Context, func(format string, args ...any)) {
	t.Helper()
	in := startInspector(t, npm, serverURL, era)
	b := startBrowser(t, chromium)
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	t.Cleanup(cancel)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format+"\n%s\n%s log:\n%s", append(args, b.pageState(in), server, serverLogs)...)
	}
	link, err := in.appLink(serverURL, tool, args)
	if err != nil {
		t.Fatal(err)
	}
	if err := openApp(ctx, link); err != nil {
		fail("the Inspector's apps form never reached data-app-status=\"ready\": %v", err)
	}
	return ctx, fail
}

// openApp navigates to the deep link and waits until the Inspector's apps
// form says the view is ready (its ui/initialize answered and
// ui/notifications/initialized received).
func openApp(ctx context.Context, link string) error {
	return chromedp.Do(ctx,
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="apps-form"][data-app-status="ready"]`)),
	)
}

// screenshot writes the whole page as a PNG to path.
func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot: not a PNG (%d bytes)", len(png))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// envAppsExamples is where scripts/test.sh installs the ext-apps example
// servers (@modelcontextprotocol/server-basic-vanillajs and -preact).
const envAppsExamples = "PMCP_APPS_EXAMPLES"

// appsExample is the command line of one ext-apps example server over
// stdio, or skips (fails under CI=true) when they are not installed.
func appsExample(t *testing.T, node, name string) []string {
	t.Helper()
	dir := os.Getenv(envAppsExamples)
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s is not set (scripts/test.sh installs the ext-apps example servers)", envAppsExamples)
		}
		t.Skipf("%s is not set (scripts/test.sh installs the ext-apps example servers): skipping", envAppsExamples)
	}
	main := filepath.Join(dir, "node_modules", "@modelcontextprotocol", name, "dist", "index.js")
	if _, err := os.Stat(main); err != nil {
		t.Fatalf("%s: %v", envAppsExamples, err)
	}
	return []string{node, main, "--stdio"}
}

// isoTime matches the time the get-time example's view shows.
var isoTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`)

// The Inspector renders an ext-apps example server's app (the reference
// SDK's App class, bundled in the view) served through pmcp bridge:
//   - one upstream, Inspector in the modern era (the bridge translates to
//     the example's legacy era): the view reaches data-app-status="ready",
//     shows the tool's result, and its button's tools/call of get-time goes
//     through the Inspector and the bridge and back into the view;
//   - two upstreams aggregated (vanillajs and preact, both serving
//     ui://get-time/mcp-app.html), Inspector in the legacy era: the prefixed
//     app tool renders to "ready" and shows its result.
func TestBrowserInspectorBridgedApp(t *testing.T) {
	chromium, npm := browserEnv(t)
	vanilla := appsExample(t, npm.node, "server-basic-vanillajs")
	preact := appsExample(t, npm.node, "server-basic-preact")
	bin := pmcpBinary(t)
	for _, tc := range []struct {
		name, era, tool string
		bridge          []string
		callBack        bool
	}{
		{"one upstream", "modern", "get-time", append([]string{"bridge", "--listen", "127.0.0.1:0", "--"}, vanilla...), true},
		{"aggregated", "legacy", "vanilla_get-time", []string{"bridge", "--listen", "127.0.0.1:0",
			"--upstream", "vanilla=" + strings.Join(vanilla, " "), "--upstream", "preact=" + strings.Join(preact, " ")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serverURL, bridgeLogs, err := startHTTP(t, bin, tc.bridge...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, fail := openAppInInspector(t, chromium, npm, serverURL, tc.era, tc.tool, map[string]any{}, "pmcp bridge", bridgeLogs)
			first, err := waitElement(ctx, "server-time", func(e *element) bool { return e.text != "Loading..." })
			if err != nil || !isoTime.MatchString(first.text) {
				fail("the view shows %+v (%v), want the tool result's time", first, err)
			}
			if tc.callBack {
				btn, err := waitElement(ctx, "get-time-btn", func(*element) bool { return true })
				if err == nil {
					err = click(ctx, btn)
				}
				if err != nil {
					fail("clicking the view's Get Server Time button: %v", err)
				}
				again, err := waitElement(ctx, "server-time", func(e *element) bool { return e.text != first.text })
				if err != nil || !isoTime.MatchString(again.text) {
					fail("after the view's tools/call of get-time it shows %+v (%v), want a new time", again, err)
				}
			}
			screenshot(t, ctx, filepath.Join(t.TempDir(), "apps-bridge.png"))
		})
	}
}

// The README's MCP Apps program (examples/apps, a stdio server) through
// pmcp bridge: the Inspector renders its hand-written view, which shows
// the counter tool's structuredContent (so the host declared the
// extension and the handler did not fall back to text), and the view's
// +1 button calls the app-only bump tool through the Inspector and the
// bridge and shows its answer.
func TestBrowserInspectorExampleApp(t *testing.T) {
	chromium, npm := browserEnv(t)
	example := filepath.Join(t.TempDir(), "apps")
	build := exec.Command("go", "build", "-o", example, "./examples/apps")
	build.Dir = ".."
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building examples/apps: %v\n%s", err, out)
	}
	serverURL, bridgeLogs, err := startHTTP(t, pmcpBinary(t), "bridge", "--listen", "127.0.0.1:0", "--", example)
	if err != nil {
		t.Fatal(err)
	}
	ctx, fail := openAppInInspector(t, chromium, npm, serverURL, "legacy", "counter", map[string]any{}, "pmcp bridge", bridgeLogs)
	if n, err := waitElement(ctx, "n", func(e *element) bool { return e.text != "…" }); err != nil || n.text != "0" {
		fail("the view shows the counter as %+v (%v), want 0 from the tool's structuredContent", n, err)
	}
	btn, err := waitElement(ctx, "bump", func(e *element) bool { _, disabled := e.attrs["disabled"]; return !disabled })
	if err == nil {
		err = click(ctx, btn)
	}
	if err != nil {
		fail("clicking the view's +1 button: %v", err)
	}
	if n, err := waitElement(ctx, "n", func(e *element) bool { return e.text != "0" }); err != nil || n.text != "1" {
		fail("after the view's tools/call of bump it shows %+v (%v), want 1", n, err)
	}
}
