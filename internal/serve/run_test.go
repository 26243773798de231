package serve

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeShutsDownGracefully cancels Serve's context while a request is
// under way: the request still gets its answer, and Serve returns nil
// once it has.
func TestServeShutsDownGracefully(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logw syncBuffer
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, h, &logw) }()

	answered := make(chan string, 1)
	go func() {
		res, err := http.Get(URL(ln.Addr()) + "slow")
		if err != nil {
			answered <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		answered <- string(b)
	}()
	<-started
	cancel()
	// Once the shutdown has begun, the listener is closed: wait for a new
	// connection to be refused, then let the request under way finish.
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if got := <-answered; got != "done" {
		t.Errorf("the request under way got %q, want done", got)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve returned %v after a shutdown, want nil", err)
	}
	if _, err := http.Get(URL(ln.Addr())); err == nil {
		t.Error("the server still answers after Serve returned")
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z 127\.0\.0\.1:\d+ "GET /slow" 200 4 \d+\.\dms\n$`).MatchString(logw.String()) {
		t.Errorf("access log %q, want one line for the request", logw.String())
	}
}

func TestServeLogsAndLimits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var logw syncBuffer
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, testHandler(t, snowflake.Twitter()), &logw) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	base := URL(ln.Addr())
	for _, target := range []string{"api/compose?datacenter=1&timestamp=1288834975657", "api/compose?datacenter=32", "nope"} {
		res, err := http.Get(base + target)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	// A request line and headers larger than MaxHeaderBytes (plus the
	// 4 KiB net/http allows over it) get 431.
	req, _ := http.NewRequest("GET", base+"api/decompose?id=1", nil)
	req.Header.Set("X-Big", strings.Repeat("x", MaxHeaderBytes+8<<10))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("headers of %d bytes: status %d, want 431", MaxHeaderBytes+8<<10, res.StatusCode)
	}
	lines := strings.Split(strings.TrimSuffix(logw.String(), "\n"), "\n")
	want := []string{`"GET /api/compose?datacenter=1&timestamp=1288834975657" 200 251 `, `"GET /api/compose?datacenter=32" 400 68 `, `"GET /nope" 404 19 `}
	if len(lines) != len(want) {
		t.Fatalf("access log has %d lines, want %d:\n%s", len(lines), len(want), logw.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], " 127.0.0.1:") || !strings.Contains(lines[i], w) {
			t.Errorf("access log line %q, want one with %q", lines[i], w)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true,
		"": false, "0.0.0.0": false, "::": false, "192.168.1.1": false, "example.com": false} {
		if got := IsLoopback(host); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}
