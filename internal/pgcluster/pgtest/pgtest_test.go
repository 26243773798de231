package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// count runs a count(*) query with one argument on the server DSN.
func count(t *testing.T, query, arg string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ServerDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, query, arg).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDSN(t *testing.T) {
	ctx := context.Background()
	var first string
	t.Run("create", func(t *testing.T) {
		dsn := DSN(t)
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&first); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(first, Prefix) {
			t.Errorf("database %q does not start with %q", first, Prefix)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE t (id bigint)"); err != nil {
			t.Fatal(err)
		}
		if other := DSN(t); other == dsn {
			t.Errorf("two DSN calls gave the same database %s", dsn)
		}
	})
	if first == "" {
		t.FailNow()
	}
	if n := count(t, "SELECT count(*) FROM pg_catalog.pg_database WHERE datname = $1", first); n != 0 {
		t.Errorf("database %s still exists after its test", first)
	}
}

func TestRole(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("create", func(t *testing.T) {
		dsn := DSN(t)
		name = Role(t, dsn, "app", "LOGIN")
		if !strings.HasPrefix(name, Prefix) || !strings.Contains(name, "_app") {
			t.Errorf("role %q: want %s…_app", name, Prefix)
		}
		if other := Role(t, dsn, "app", ""); other == name {
			t.Errorf("two Role calls gave the same name %s", name)
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		// What the role owns, and a session of its own, do not stop its removal.
		if _, err := conn.Exec(ctx, "CREATE TABLE owned (id bigint); ALTER TABLE owned OWNER TO "+name+"; GRANT CREATE ON SCHEMA public TO "+name); err != nil {
			t.Fatal(err)
		}
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.User = name
		if as, err := pgx.ConnectConfig(ctx, cfg); err == nil {
			t.Cleanup(func() { as.Close(ctx) })
		} // password or trust: the session is a bonus, not the point
	})
	if name == "" {
		t.FailNow()
	}
	if n := count(t, "SELECT count(*) FROM pg_catalog.pg_roles WHERE rolname = $1", name); n != 0 {
		t.Errorf("role %s still exists after its test", name)
	}
}

func TestLoginRole(t *testing.T) {
	ctx := context.Background()
	dsn := DSN(t)
	name, as := LoginRole(t, dsn, "login", "")
	conn, err := pgx.Connect(ctx, as)
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	defer conn.Close(ctx)
	var user, db string
	var super, createdb bool
	if err := conn.QueryRow(ctx, "SELECT current_user, current_database(), rolsuper, rolcreatedb FROM pg_catalog.pg_roles WHERE rolname = current_user").Scan(&user, &db, &super, &createdb); err != nil {
		t.Fatal(err)
	}
	want, _ := pgx.ParseConfig(dsn)
	if user != name || db != want.Database || super || createdb {
		t.Errorf("as the login role: user %s, database %s, superuser %v, createdb %v; want %s, %s, false, false", user, db, super, createdb, name, want.Database)
	}
}

func TestRoleRefusesAnUnsafeBase(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { recover() }()
		Role(ft, "postgres://unused", "x; DROP ROLE postgres", "")
	}()
	if !strings.Contains(ft.msg, "lower-case letters") {
		t.Errorf("Role with an unsafe base: %q, want a refusal", ft.msg)
	}
}

// fatalRecorder records Fatalf instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	panic("fatal")
}

// TestServer checks that Server gives the test a server of its own, not
// the one DSN's databases are on.
func TestServer(t *testing.T) {
	c := Server(t)
	ctx := context.Background()
	id := func(dsn string) int64 {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var id int64
		if err := conn.QueryRow(ctx, "SELECT system_identifier FROM pg_catalog.pg_control_system()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	if own, shared := id(c.DSN()), id(ServerDSN(t)); own == shared {
		t.Errorf("Server's cluster has the shared server's system identifier %d", own)
	}
}

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://u:p@db:5432/app?sslmode=disable", "postgres://u:p@db:5432/x?sslmode=disable"},
		{"postgresql://u@db", "postgresql://u@db/x"},
		{"postgres://postgres@/postgres?host=%2Ftmp%2Fs&port=5", "postgres://postgres@/x?host=%2Ftmp%2Fs&port=5"},
		{"host=db user=u dbname=app", "host=db user=u dbname=app dbname=x"},
	} {
		got, err := withDatabase(tc.dsn, "x")
		if err != nil || got != tc.want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", tc.dsn, got, err, tc.want)
			continue
		}
		cfg, err := pgx.ParseConfig(got)
		if err != nil || cfg.Database != "x" {
			t.Errorf("withDatabase(%q) = %q names database %q (%v), want x", tc.dsn, got, cfg.Database, err)
		}
	}
	if _, err := withDatabase("postgres://u:s3cret@db:bad/x", "x"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("withDatabase of a bad URL: %v, want an error without the password", err)
	}
}

func TestUniqueName(t *testing.T) {
	a, b := uniqueName("TestFoo/sub case"), uniqueName("TestFoo/sub case")
	if a == b {
		t.Errorf("uniqueName gave %q twice", a)
	}
	if !strings.HasPrefix(a, Prefix) || !strings.HasSuffix(a, "_testfoo_sub_case") {
		t.Errorf("uniqueName = %q, want %s<pid>_<n>_testfoo_sub_case", a, Prefix)
	}
	if long := uniqueName(strings.Repeat("Ä", 200)); len(long) > 63 {
		t.Errorf("uniqueName gave %d bytes", len(long))
	}
}
