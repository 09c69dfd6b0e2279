package interop

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
			in := startInspector(t, npm, serverURL, era)
			b := startBrowser(t, chromium)
			ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
			defer cancel()
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf(format+"\n%s\npmcp serve log:\n%s", append(args, b.pageState(in), serveLogs)...)
			}
			link, err := in.appLink(serverURL, "show_app", map[string]any{"name": "browser"})
			if err != nil {
				t.Fatal(err)
			}
			if err := openApp(ctx, link); err != nil {
				fail("the Inspector's apps form never reached data-app-status=\"ready\": %v", err)
			}
			attrs, text, err := waitFrameNode(ctx, "callback", func(attrs map[string]string, _ string) bool {
				return attrs["data-call-status"] != "pending"
			})
			if err != nil || attrs["data-call-status"] != "ok" || !strings.Contains(text, "Server answered app_ping: pong to view") {
				fail("the view's tools/call of app_ping: %v (data-call-status=%q, text %q)", err, attrs["data-call-status"], text)
			}
			if _, got, err := waitFrameNode(ctx, "era", func(_ map[string]string, text string) bool { return text != "–" }); err != nil || got != era {
				fail("the view shows era %q (%v), want %q", got, err, era)
			}
			if _, got, err := waitFrameNode(ctx, "greeting", func(map[string]string, string) bool { return true }); err != nil || got != "Hello, browser!" {
				fail("the view shows greeting %q (%v): appArgs did not reach show_app", got, err)
			}
			shot := filepath.Join(t.TempDir(), "apps-inspector.png")
			if era == "legacy" && *screenshotFlag != "" {
				shot = *screenshotFlag
			}
			screenshot(t, ctx, shot)
		})
	}
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
