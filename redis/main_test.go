package redis

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// The tests run against a real redis-server: the one at PMCP_REDIS_ADDR
// (scripts/test.sh starts it), else one this process starts when the
// binary is on PATH. Without either they fail under CI=true and are
// skipped elsewhere.
var (
	redisAddr  string
	noRedisWhy string
)

func TestMain(m *testing.M) {
	// go-redis's own log lines are dropped (dial failures during the
	// restart test would flood the output).
	goredis.SetLogger(NewGoRedisLogger(nil))
	code := func() int {
		redisAddr = os.Getenv("PMCP_REDIS_ADDR")
		if redisAddr == "" {
			srv, err := startRedis(0)
			switch {
			case err == nil:
				defer srv.stop()
				redisAddr = srv.addr
			case os.Getenv("CI") == "true":
				fmt.Fprintf(os.Stderr, "FAIL: no Redis for the redis module's tests (PMCP_REDIS_ADDR unset, %v)\n", err)
				return 1
			default:
				noRedisWhy = err.Error()
			}
		}
		return m.Run()
	}()
	if code == 0 {
		err := goleak.Find()
		// After dial failures (TestRestartRedis) go-redis runs a probe
		// goroutine that sleeps 1 s between dials before it notices its
		// pool closed; give it that long, a few times over.
		for i := 0; i < 3 && err != nil; i++ {
			time.Sleep(time.Second)
			err = goleak.Find()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// redisServer is a redis-server child process.
type redisServer struct {
	cmd  *exec.Cmd
	addr string
	port int
	done chan struct{} // closed when the process exited
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startRedis starts redis-server on port (0 = a free one) without
// persistence and returns once it accepts connections (it logs "Ready to
// accept connections", which is the signal waited for).
func startRedis(port int) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &redisServer{cmd: cmd, addr: "127.0.0.1:" + strconv.Itoa(port), port: port, done: make(chan struct{})}
	ready := make(chan struct{})
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			if !signalled {
				log.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "Ready to accept connections") {
					signalled = true
					close(ready)
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(s.done)
	}()
	select {
	case <-ready:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("redis-server exited: %s", log.String())
	case <-time.After(20 * time.Second):
		s.stop()
		return nil, errors.New("redis-server did not become ready in 20s")
	}
}

// stop kills the server and waits for it to exit.
func (s *redisServer) stop() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// needRedis returns a client of the test Redis, closed at cleanup.
func needRedis(t testing.TB) goredis.UniversalClient {
	t.Helper()
	if redisAddr == "" {
		t.Skip("no redis-server: " + noRedisWhy)
	}
	c := goredis.NewUniversalClient(&goredis.UniversalOptions{Addrs: []string{redisAddr}})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING %s: %v", redisAddr, err)
	}
	return c
}

// uniquePrefix keeps tests that share one Redis apart.
func uniquePrefix(what string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "test:" + what + ":" + hex.EncodeToString(b[:])
}
