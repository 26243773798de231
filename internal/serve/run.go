package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// Limits of the server Serve runs.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	WriteTimeout      = 10 * time.Second
	IdleTimeout       = 60 * time.Second
	MaxHeaderBytes    = 8 << 10 // the request line and headers, the query included
	ShutdownTimeout   = 5 * time.Second
)

// Serve serves h on ln until ctx is cancelled, then shuts down gracefully:
// it stops accepting connections and waits up to ShutdownTimeout for the
// requests under way. It answers only the requests whose Host names ln's
// address, a loopback name or one of allowHosts (see Hosts); the others
// get 421. Each request is logged on logw, one line each; so are the
// server's own errors. It returns nil after a shutdown, else the error
// that stopped the server (or a malformed name in allowHosts).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logw io.Writer, allowHosts ...string) error {
	hosts, err := NewHosts(ln.Addr(), allowHosts)
	if err != nil {
		return err
	}
	logger := log.New(&lockedWriter{w: logw}, "", 0)
	srv := &http.Server{
		Handler:           AccessLog(hosts.Handler(h), logger),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          log.New(logger.Writer(), "sfgen serve: ", 0),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// AccessLog wraps h so that every request is logged on l, in one line:
//
//	2026-12-01T13:20:30.123Z 127.0.0.1:50312 "GET /api/compose?datacenter=1" 200 215 0.4ms
//
// that is the time (UTC), the client's address, the method and the URL as
// requested (escaped, so one line), the status, the bytes of the body
// and how long the answer took.
func AccessLog(h http.Handler, l *log.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		l.Printf("%s %s %q %d %d %.1fms", start.UTC().Format("2006-01-02T15:04:05.000Z07:00"), r.RemoteAddr,
			r.Method+" "+r.URL.RequestURI(), rec.status, rec.bytes, float64(time.Since(start).Microseconds())/1000)
	})
}

// recorder is a ResponseWriter that remembers the status and counts the
// bytes.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// lockedWriter serializes writes, so that log lines from concurrent
// requests never interleave on a writer that is not safe for that.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// assetTypes are the content types of the assets served.
var assetTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
}

// serveAsset serves one embedded file of assets/, not the page's template
// and no directory listing.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	typ, ok := assetTypes[path.Ext(name)]
	if !ok || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(assets, "assets/"+name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", typ)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, strings.NewReader(string(b)))
}

// IsLoopback reports whether host, as in a listen address, is a loopback
// name or address ("localhost", 127.0.0.0/8, ::1).
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL returns the URL of the page served on addr, a listener's address;
// on a wildcard address (0.0.0.0, ::), which is no address to browse to,
// the URL on this machine: 127.0.0.1 and the port.
func URL(addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		return fmt.Sprintf("http://127.0.0.1:%d/", ta.Port)
	}
	return fmt.Sprintf("http://%s/", addr)
}

// Unwrap returns the ResponseWriter wrapped, for http.ResponseController.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
