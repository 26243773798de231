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

// ErrStopped is returned by [Cluster.CreateDatabase] and
// [Cluster.DropDatabase] after [Cluster.Stop].
var ErrStopped = errors.New("cluster stopped")

const (
	// port names the socket file (.s.PGSQL.5432); nothing listens on TCP.
	port = 5432
	// defaultStartTimeout bounds initdb plus startup when ctx has no
	// deadline of its own.
	defaultStartTimeout = 60 * time.Second
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
	binDir       string
	startTimeout time.Duration
	settings     []string // "name=value"
}

// WithBinDir makes Start use the server binaries in dir, and look nowhere
// else, in place of the search described in the package documentation.
func WithBinDir(dir string) Option { return func(c *config) { c.binDir = dir } }

// WithStartTimeout bounds initdb plus startup when Start's context has no
// earlier deadline. The default is one minute.
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

// WithSetting passes a server setting on postgres' command line (-c
// name=value), after and so in place of the package's own.
func WithSetting(name, value string) Option {
	return func(c *config) { c.settings = append(c.settings, name+"="+value) }
}

// A Cluster is a running throwaway PostgreSQL server. Its methods are safe
// for concurrent use.
type Cluster struct {
	binDir  string
	dir     string // socket directory, holding the marker and the data dir
	dataDir string

	cmd     *exec.Cmd
	exited  chan struct{} // closed when postgres has exited
	waitErr error         // postgres' exit status, set before exited closes
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
	cfg := config{startTimeout: defaultStartTimeout}
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
		binDir:  binDir,
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		exited:  make(chan struct{}),
		stopped: make(chan struct{}),
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

	if cfg.startTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.startTimeout)
		defer cancel()
	}
	if err := c.initdb(ctx, runAs); err != nil {
		return nil, err
	}
	if err := c.startServer(runAs, cfg.settings); err != nil {
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

func (c *Cluster) startServer(runAs *osUser, extra []string) error {
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
	args := []string{"-D", c.dataDir}
	for _, s := range append(settings, extra...) {
		args = append(args, "-c", s)
	}
	cmd := c.command(runAs, "postgres", args...)
	cmd.Stdout = f
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run postgres: %w", err)
	}
	c.cmd = cmd
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return nil
}

// waitReady connects until the server answers, it exits or ctx is done.
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

// BinDir returns the directory of the server binaries the cluster runs,
// where psql and pgbench usually are too.
func (c *Cluster) BinDir() string { return c.binDir }

// DataDir returns the cluster's data directory. It is removed by Stop.
func (c *Cluster) DataDir() string { return c.dataDir }

// LogPath returns the server's log file, in the data directory.
func (c *Cluster) LogPath() string { return filepath.Join(c.dataDir, logName) }

// CreateDatabase creates database name and returns its URL. It returns
// [ErrStopped] after Stop.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (dsn string, err error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if err := c.exec(ctx, "CREATE DATABASE "+quoteIdent(name)); err != nil {
		return "", fmt.Errorf("create database %s: %w", quoteIdent(name), err)
	}
	return c.dsnFor(name), nil
}

// DropDatabase drops database name if it exists, ending any sessions still
// connected to it. It returns [ErrStopped] after Stop.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := c.exec(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(name)+" WITH (FORCE)")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42601" { // before PostgreSQL 13: no FORCE
		err = c.exec(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(name))
	}
	if err != nil {
		return fmt.Errorf("drop database %s: %w", quoteIdent(name), err)
	}
	return nil
}

func checkName(name string) error {
	if name == "" || len(name) > 63 || strings.ContainsRune(name, 0) {
		return fmt.Errorf("invalid database name %q: need 1 to 63 bytes, no NUL", name)
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// exec runs one statement on the postgres database.
func (c *Cluster) exec(ctx context.Context, sql string) error {
	select {
	case <-c.stopped:
		return ErrStopped
	default:
	}
	conn, err := pgconn.Connect(ctx, c.DSN())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql).ReadAll()
	return err
}

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
	if c.cmd != nil {
		select {
		case <-c.exited:
		default:
			interrupt(c.cmd.Process)
			t := time.NewTimer(stopTimeout)
			select {
			case <-c.exited:
			case <-t.C:
				killGroup(c.cmd.Process)
				<-c.exited
			}
			t.Stop()
		}
	}
	if c.logFile != nil {
		c.logFile.Close()
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove cluster directory: %w", err)
	}
	return nil
}
