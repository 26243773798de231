package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrStopped is returned by [Cluster.Restart] after [Cluster.Stop].
var ErrStopped = errors.New("cluster stopped")

const (
	// port names the socket file (.s.PGSQL.5432); nothing listens on TCP.
	port = 5432
	// startTimeout bounds initdb plus startup when ctx has no earlier
	// deadline.
	startTimeout = 60 * time.Second
	// stopTimeout is how long Stop waits for a fast shutdown before SIGKILL.
	stopTimeout = 10 * time.Second
	// logName is the server's log file in the data directory.
	logName = "postgres.log"
	// logTail is how many bytes of a log an error quotes.
	logTail = 2000
)

// An Option changes how [Start] sets up a cluster.
type Option func(*config)

type config struct {
	binDir   string
	settings []string // "name=value"
}

// WithBinDir makes Start use the server binaries in dir, and look nowhere
// else, in place of the search described in the package documentation.
func WithBinDir(dir string) Option { return func(c *config) { c.binDir = dir } }

// WithSetting passes a server setting on postgres' command line (-c
// name=value), after and so in place of the package's own.
func WithSetting(name, value string) Option {
	return func(c *config) { c.settings = append(c.settings, name+"="+value) }
}

// A Cluster is a running throwaway PostgreSQL server. Its methods are safe
// for concurrent use.
type Cluster struct {
	binDir   string
	dir      string // socket directory, holding the marker and the data dir
	dataDir  string
	runAs    *osUser  // nil: the current user
	settings []string // the caller's, from WithSetting

	mu      sync.Mutex    // held by Restart and Stop while they change the fields below
	cmd     *exec.Cmd     // the running postgres
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // cmd's exit status, set before exited closes
	logFile *os.File

	stopOnce sync.Once
	stopErr  error
	stopped  chan struct{} // closed when Stop begins
}

// Start creates a cluster in a fresh directory, starts postgres on it and
// returns once it accepts connections. ctx bounds only the start: the
// server runs until [Cluster.Stop] or until the calling process dies. When
// no server binaries are found the error wraps [ErrNoServer]; when postgres
// fails to start it quotes the end of the server's log.
func Start(ctx context.Context, opts ...Option) (*Cluster, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	binDir, err := FindBinDir(cfg.binDir)
	if err != nil {
		return nil, err
	}
	runAs, err := serverUser()
	if err != nil {
		return nil, err
	}
	sweep("/tmp", os.TempDir())

	dir, err := makeDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		binDir:   binDir,
		dir:      dir,
		dataDir:  filepath.Join(dir, "data"),
		runAs:    runAs,
		settings: cfg.settings,
		stopped:  make(chan struct{}),
	}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()

	if err := os.WriteFile(filepath.Join(dir, markerName), []byte(markerText()), 0o644); err != nil {
		return nil, fmt.Errorf("write cluster marker: %w", err)
	}
	if runAs != nil {
		if err := chown(dir, runAs); err != nil {
			return nil, fmt.Errorf("give cluster directory to OS user %s: %w", runAs.name, err)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.initdb(ctx, runAs); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.startServer(); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// makeDir creates the cluster directory, in /tmp when possible so that the
// socket path stays short.
func makeDir() (string, error) {
	dir, err := os.MkdirTemp("/tmp", dirPrefix)
	if err != nil {
		var err2 error
		if dir, err2 = os.MkdirTemp("", dirPrefix); err2 != nil {
			return "", fmt.Errorf("create cluster directory: %w", err)
		}
	}
	// Socket paths are limited to sizeof(sun_path)-1, 107 bytes on Linux
	// and 103 on the BSDs; unix_socket_directories takes a comma list.
	if len(filepath.Join(dir, ".s.PGSQL.5432")) > 100 || strings.ContainsAny(dir, ",\" \t\n\\") {
		os.RemoveAll(dir)
		return "", fmt.Errorf("cluster directory %q cannot hold a socket: its path is too long or has special characters", dir)
	}
	return dir, nil
}

// env returns the environment for initdb and postgres: ours without the
// PG* variables, which could point them elsewhere, and in the C locale.
func env() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C")
}

func (c *Cluster) command(runAs *osUser, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.binDir, name), args...)
	cmd.Dir = c.dir
	cmd.Env = env()
	cmd.SysProcAttr = procAttr(runAs)
	return cmd
}

func (c *Cluster) initdb(ctx context.Context, runAs *osUser) error {
	cmd := c.command(runAs, "initdb", "-D", c.dataDir, "-A", "trust", "-U", "postgres",
		"-E", "UTF8", "--locale=C", "--no-sync")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run initdb: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("initdb: %w\n%s", err, tail(out.Bytes()))
		}
		return nil
	case <-ctx.Done():
		killGroup(cmd.Process)
		<-done
		return fmt.Errorf("initdb: %w", ctx.Err())
	}
}

// startServer starts postgres; c.mu must be held.
func (c *Cluster) startServer() error {
	runAs := c.runAs
	logPath := filepath.Join(c.dataDir, logName)
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("create server log: %w", err)
	}
	c.logFile = f
	if runAs != nil {
		if err := chown(logPath, runAs); err != nil {
			return fmt.Errorf("give server log to OS user %s: %w", runAs.name, err)
		}
	}
	settings := []string{
		"listen_addresses=",
		"unix_socket_directories=" + c.dir,
		fmt.Sprintf("port=%d", port),
		"fsync=off",
		"full_page_writes=off",
		"max_connections=100",
		"shared_buffers=128MB",
		"huge_pages=off",
		"logging_collector=off",
	}
	extra, err := envSettings()
	if err != nil {
		return err
	}
	settings = append(settings, extra...)
	args := []string{"-D", c.dataDir}
	for _, s := range append(settings, c.settings...) {
		args = append(args, "-c", s)
	}
	cmd := c.command(runAs, "postgres", args...)
	cmd.Stdout = f
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run postgres: %w", err)
	}
	exited := make(chan struct{})
	c.cmd, c.exited = cmd, exited
	go func() {
		err := cmd.Wait()
		c.waitErr = err
		close(exited)
	}()
	return nil
}

// waitReady connects until the server answers, it exits or ctx is done;
// c.mu must be held.
func (c *Cluster) waitReady(ctx context.Context) error {
	dsn := c.DSN() + "&connect_timeout=5"
	delay := 5 * time.Millisecond
	for {
		conn, err := pgconn.Connect(ctx, dsn)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("postgres exited during startup (%v); end of %s:\n%s", c.waitErr, c.LogPath(), c.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready: %w (last try: %v); end of %s:\n%s", ctx.Err(), err, c.LogPath(), c.logTail())
		case <-time.After(delay):
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

func (c *Cluster) logTail() string {
	b, err := os.ReadFile(c.LogPath())
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return tail(b)
}

// tail returns the end of b, at most logTail bytes from a line start.
func tail(b []byte) string {
	b = bytes.TrimRight(b, "\n")
	if len(b) > logTail {
		b = b[len(b)-logTail:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// DSN returns the URL of the database postgres, as superuser postgres.
func (c *Cluster) DSN() string { return c.dsnFor("postgres") }

func (c *Cluster) dsnFor(db string) string {
	host := strings.ReplaceAll(url.QueryEscape(c.dir), "%2F", "/")
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", url.PathEscape(db), host, port)
}

// Address returns the server's socket directory and port, as libpq's
// host and port take them (and Citus' node names).
func (c *Cluster) Address() (host string, portNumber int) { return c.dir, port }

// BinDir returns the directory of the server binaries the cluster runs,
// where psql and pgbench usually are too.
func (c *Cluster) BinDir() string { return c.binDir }

// LogPath returns the server's log file, in the data directory.
func (c *Cluster) LogPath() string { return filepath.Join(c.dataDir, logName) }

// Stop shuts the server down, fast (SIGINT, then SIGKILL after ten
// seconds), and removes the cluster's directory. Calls after the first do
// nothing and return the first's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		close(c.stopped)
		c.stopErr = c.stop()
	})
	return c.stopErr
}

func (c *Cluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shutdown(interrupt)
	if c.logFile != nil {
		c.logFile.Close()
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove cluster directory: %w", err)
	}
	return nil
}

// shutdown signals postgres with signal, waits for it to exit (SIGKILL to
// its process group after stopTimeout) and closes its log; c.mu must be
// held.
func (c *Cluster) shutdown(signal func(*os.Process) error) {
	if c.cmd == nil {
		return
	}
	select {
	case <-c.exited:
	default:
		signal(c.cmd.Process)
		t := time.NewTimer(stopTimeout)
		select {
		case <-c.exited:
		case <-t.C:
			killGroup(c.cmd.Process)
			<-c.exited
		}
		t.Stop()
	}
	c.cmd = nil
}

// Restart stops the server and starts it again on the same data, for
// tests of what survives: with crash false a fast shutdown (sessions end,
// a checkpoint is written), with crash true an immediate one (SIGQUIT, no
// checkpoint, the next start recovers from WAL, as after a power cut). It
// returns once the server accepts connections again; ctx bounds the
// start. It returns [ErrStopped] after Stop.
func (c *Cluster) Restart(ctx context.Context, crash bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.stopped:
		return ErrStopped
	default:
	}
	if crash {
		c.shutdown(quit)
	} else {
		c.shutdown(interrupt)
	}
	if c.logFile != nil {
		c.logFile.Close()
		c.logFile = nil
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := c.startServer(); err != nil {
		return err
	}
	return c.waitReady(ctx)
}
