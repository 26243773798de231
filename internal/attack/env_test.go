package attack

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgident"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// An env is one test's database, with the superuser's connection pool
// and the roles the test made.
type env struct {
	t     *testing.T
	dsn   string          // the superuser's
	cfg   *pgx.ConnConfig // the superuser's
	db    *sql.DB         // the superuser's pool
	mu    sync.Mutex
	roles map[string]string // role name -> password
}

// newEnv gives t a database of its own, from pgtest, as the superuser
// (the attacks change the public schema's privileges and fill it with
// hostile objects).
func newEnv(t *testing.T) *env {
	t.Helper()
	dsn := pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("parse DSN: %v", err)
	}
	e := &env{t: t, dsn: dsn, cfg: cfg, roles: map[string]string{}}
	e.db = stdlib.OpenDB(*cfg)
	t.Cleanup(func() { e.db.Close() })
	return e
}

// role creates a LOGIN role, NOSUPERUSER and with nothing granted, named
// after base by pgtest (unique on the server, removed with what it owns
// when the test ends).
func (e *env) role(base string) string {
	e.t.Helper()
	name, dsn := pgtest.LoginRole(e.t, e.dsn, base, "")
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	e.roles[name] = cfg.Password
	e.mu.Unlock()
	return name
}

// exec runs q (one or more statements, in the simple protocol) as the
// superuser and fails the test on an error.
func (e *env) exec(q string) {
	e.t.Helper()
	if _, err := e.db.ExecContext(context.Background(), q); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

// isSuperuser tells whether role is a superuser now.
func (e *env) isSuperuser(role string) bool {
	e.t.Helper()
	var super bool
	if err := e.db.QueryRowContext(context.Background(),
		"SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", role).Scan(&super); err != nil {
		e.t.Fatalf("is %s a superuser: %v", role, err)
	}
	return super
}

// A session is one connection, as the superuser or as a role, with the
// notices it has received.
type session struct {
	*sql.Conn
	role    string // "" for the superuser
	mu      sync.Mutex
	notices []string
}

// roleConfig is the connection config for role ("" for the superuser).
func (e *env) roleConfig(role string) *pgx.ConnConfig {
	e.t.Helper()
	cfg := e.cfg.Copy()
	if role != "" {
		e.mu.Lock()
		pw, ok := e.roles[role]
		e.mu.Unlock()
		if !ok {
			e.t.Fatalf("connect as %s: not a role of this test", role)
		}
		cfg.User, cfg.Password = role, pw
	}
	return cfg
}

// openDB opens a connection pool as role, closed when the test ends.
func (e *env) openDB(role string) *sql.DB {
	e.t.Helper()
	db := stdlib.OpenDB(*e.roleConfig(role))
	e.t.Cleanup(func() { db.Close() })
	return db
}

// connect opens a session as role ("" for the superuser), closed when the
// test ends.
func (e *env) connect(role string) *session {
	e.t.Helper()
	s := &session{role: role}
	cfg := e.roleConfig(role)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		s.mu.Lock()
		s.notices = append(s.notices, n.Message)
		s.mu.Unlock()
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background())
	if err != nil {
		db.Close()
		e.t.Fatalf("connect as %q: %v", role, err)
	}
	s.Conn = conn
	e.t.Cleanup(func() {
		conn.Close()
		db.Close()
	})
	return s
}

// exec runs q in s and fails the test on an error.
func (s *session) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	if _, err := s.ExecContext(context.Background(), q, args...); err != nil {
		who := s.role
		if who == "" {
			who = "the superuser"
		}
		t.Fatalf("as %s: %s: %v", who, q, err)
	}
}

// takeNotices returns the notices s has received since the last call.
func (s *session) takeNotices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.notices
	s.notices = nil
	return n
}

// pid is the backend process id of s.
func (s *session) pid(t testing.TB) int {
	t.Helper()
	var pid int
	if err := s.QueryRowContext(context.Background(), "SELECT pg_catalog.pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// qualify returns schema.name with the schema quoted, as sfgen writes it.
func qualify(schema, name string) string {
	return pgident.Quote(schema) + "." + name
}

// summary counts repeated lines: "a ×3, b".
func summary(lines []string) string {
	var order []string
	n := map[string]int{}
	for _, l := range lines {
		if n[l] == 0 {
			order = append(order, l)
		}
		n[l]++
	}
	var b strings.Builder
	for i, l := range order {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(l)
		if n[l] > 1 {
			fmt.Fprintf(&b, " ×%d", n[l])
		}
	}
	return b.String()
}
