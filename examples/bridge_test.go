package examples_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopmcp/pmcp"
)

// listening reads the "listening on URL" line of an example server.
func listening(t *testing.T, name string, out interface{ ReadString(byte) (string, error) }, stderr interface{ String() string }) string {
	t.Helper()
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s did not print its URL: %v (stderr %q)", name, err, stderr.String())
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("%s printed %q", name, line)
	}
	return url
}

// callAdd calls tool over HTTP in era and returns the sum.
func callAdd(t *testing.T, url string, era pmcp.Era, tool string) (float64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := pmcp.NewClient(pmcp.ClientOptions{Era: era}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer s.Close()
	if s.Era() != era {
		t.Fatalf("era %v, want %v", s.Era(), era)
	}
	res, err := s.CallTool(ctx, tool, map[string]int{"a": 2, "b": 3})
	if err != nil {
		return 0, err
	}
	sc, _ := res.StructuredContent.(map[string]any)
	sum, _ := sc["sum"].(float64)
	return sum, nil
}

func listTools(t *testing.T, url string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := pmcp.NewClient(pmcp.ClientOptions{}).ConnectHTTP(ctx, url, pmcp.HTTPClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools, err := s.AllTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// The bridge example serves the stdio quick start over HTTP to clients of
// both eras, and exits 0 on SIGINT.
func TestBridge(t *testing.T) {
	bridgeBin, qsBin := build(t, "bridge"), build(t, "quickstart")
	cmd, _, out, stderr := start(t, bridgeBin, "-addr", "127.0.0.1:0", qsBin)
	url := listening(t, "bridge", out, stderr)
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		sum, err := callAdd(t, url, era, "add")
		if err != nil || sum != 5 {
			t.Fatalf("%v add through the bridge: %v, %v", era, sum, err)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bridge after SIGINT: %v (stderr %q)", err, stderr)
	}
}

// The gateway example aggregates two stdio children and an HTTP server,
// prefixing their tools, hiding the ones its -deny glob matches.
func TestGateway(t *testing.T) {
	gwBin, qsBin, httpBin := build(t, "gateway"), build(t, "quickstart"), build(t, "httpserver")
	hs, _, hsOut, hsErr := start(t, httpBin, "-addr", "127.0.0.1:0")
	remote := listening(t, "httpserver", hsOut, hsErr)
	gw, _, out, stderr := start(t, gwBin, "-addr", "127.0.0.1:0", "-deny", "calc2_*",
		"calc="+qsBin, "calc2="+qsBin, "remote="+remote)
	url := listening(t, "gateway", out, stderr)
	if got, want := listTools(t, url), []string{"calc_add", "remote_add"}; !slices.Equal(got, want) {
		t.Fatalf("gateway tools %v, want %v", got, want)
	}
	for _, era := range []pmcp.Era{pmcp.EraModern, pmcp.EraLegacy} {
		for _, tool := range []string{"calc_add", "remote_add"} {
			if sum, err := callAdd(t, url, era, tool); err != nil || sum != 5 {
				t.Fatalf("%v %s: %v, %v", era, tool, sum, err)
			}
		}
		if _, err := callAdd(t, url, era, "calc2_add"); err == nil {
			t.Fatalf("%v: the denied calc2_add was called", era)
		}
	}
	for _, c := range []interface {
		Signal(os.Signal) error
	}{gw.Process, hs.Process} {
		if err := c.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
	}
	if err := gw.Wait(); err != nil {
		t.Fatalf("gateway after SIGINT: %v (stderr %q)", err, stderr)
	}
	if err := hs.Wait(); err != nil {
		t.Fatalf("httpserver after SIGINT: %v", err)
	}
}
