package main

import (
	"context"
	"fmt"
	snowflake "github.com/sfgen/sfgen"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// secret is in the password of every connection string below.
const secret = "Hunter2"

// dbCommands are the commands that connect to a database, with the
// arguments they need besides --dsn.
var dbCommands = [][]string{
	{"install"},
	{"node"},
	{"verify", "--count", "10"},
	{"bench", "--clients", "1", "--duration", "100ms"},
}

// TestDBCommandsHidePasswords: whatever form the connection string takes,
// and whether it comes from --dsn or DATABASE_URL, no command that
// connects prints its password, or any word of it, when it cannot
// connect. A string that cannot be parsed is bad usage (exit 2) and its
// error quotes nothing of it; one that parses but cannot connect exits 1.
func TestDBCommandsHidePasswords(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGCONNECT_TIMEOUT", "")
	// A real server, where the database that does not exist has the
	// password inside its name: the server's error names it, as it is
	// (the password is masked where it stands as the password, never
	// inside other words).
	// The role's password is the secret, so that a server that asks for
	// passwords (as $DATABASE_URL's may) lets it in and then names the
	// database.
	dsn := pgtest.DSN(t)
	role := pgtest.Role(t, dsn, "pwinside", "LOGIN PASSWORD '"+secret+"Secret'")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, secret+"Secret")
	dbName := "nosuch" + secret + "Secret"
	u.Path = "/" + dbName
	const unparsable, unreachable = exitUsage, exitFail
	for _, tc := range []struct {
		name, dsn string
		code      int
	}{
		{"keyword/value, bad port, space before =", "host=127.0.0.1 port=x password =Hunter2Secret", unparsable},
		{"keyword/value, bad port, quoted password with a space", "host=127.0.0.1 port=x password = 'Hunter2 Secret'", unparsable},
		{"keyword/value, unquoted password with a space", "host=127.0.0.1 password=Hunter2 Hunter2Tail port=5432", unparsable},
		{"keyword/value, unterminated quote", "host=127.0.0.1 password='Hunter2Secret", unparsable},
		{"garbage", "Hunter2Secret", unparsable},
		{"URL, bad port", "postgres://app:Hunter2Secret@127.0.0.1:x/app", unparsable},
		{"URL, password in the query, bad port", "postgres://app@127.0.0.1:x/app?password=Hunter2Secret", unparsable},
		{"URL, password with a slash", "postgres://app:Hunter2/Secret@127.0.0.1/app", unparsable},
		{"URL, query parameter without =", "postgres://app@127.0.0.1/app?Hunter2Secret", unparsable},
		{"keyword/value, closed port", "host=127.0.0.1 port=1 user=app password=Hunter2Secret connect_timeout=2", unreachable},
		{"keyword/value, closed port, quoted password with a space", "host=127.0.0.1 port=1 user=app password = 'Hunter2 Secret' connect_timeout=2", unreachable},
		{"URL, closed port", "postgres://app:Hunter2Secret@127.0.0.1:1/app?connect_timeout=2", unreachable},
		{"URL, password in the query, closed port", "postgres://app@127.0.0.1:1/app?password=Hunter2Secret&connect_timeout=2", unreachable},
		{"URL, server names a database with the password inside", u.String(), unreachable},
	} {
		for _, cmd := range dbCommands {
			for _, from := range []string{"--dsn", "DATABASE_URL"} {
				t.Run(tc.name+"/"+cmd[0]+"/"+from, func(t *testing.T) {
					args := cmd
					if from == "--dsn" {
						t.Setenv("DATABASE_URL", "")
						args = append(append([]string{}, cmd...), "--dsn", tc.dsn)
					} else {
						t.Setenv("DATABASE_URL", tc.dsn)
					}
					code, out, errOut := sfgen(t, args...)
					if code != tc.code || out != "" {
						t.Errorf("exit %d, stdout %q; want %d and nothing", code, out, tc.code)
					}
					oneLine(t, errOut)
					if strings.Contains(strings.ReplaceAll(errOut, dbName, ""), secret) {
						t.Errorf("stderr shows the password: %q", errOut)
					}
					if tc.dsn == u.String() && !strings.Contains(errOut, `database \"`+dbName+`\" does not exist`) && !strings.Contains(errOut, `database "`+dbName+`" does not exist`) {
						t.Errorf("stderr %q; want the database's name as it is", errOut)
					}
					want := "sfgen " + cmd[0] + ": connect: "
					if tc.code == unparsable {
						want = "sfgen " + cmd[0] + ": cannot parse the connection string ("
					}
					if !strings.HasPrefix(errOut, want) {
						t.Errorf("stderr %q; want it to start %q", errOut, want)
					}
				})
			}
		}
	}
}

// silentServer listens on 127.0.0.1, accepts connections and never says
// a word on them. It returns its port.
func silentServer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []net.Conn)
	go func() {
		var conns []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				done <- conns
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for _, c := range <-done {
			c.Close()
		}
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// TestDBCommandsGiveUpOnASilentServer: a server that accepts TCP and never
// answers makes each command fail after connect_timeout, instead of
// hanging.
func TestDBCommandsGiveUpOnASilentServer(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	port := silentServer(t)
	for _, d := range []struct{ form, dsn string }{
		{"URL", fmt.Sprintf("postgres://app:Hunter2Secret@127.0.0.1:%d/app?connect_timeout=1", port)},
		{"keyword/value", fmt.Sprintf("host=127.0.0.1 port=%d user=app password=Hunter2Secret connect_timeout=1", port)},
	} {
		for _, cmd := range dbCommands {
			t.Run(d.form+"/"+cmd[0], func(t *testing.T) {
				t.Parallel()
				// The caller's context ends a second before sfgen's own
				// default would: only the DSN's connect_timeout can end
				// the wait first (however slow the machine, up to 9 s).
				ctx, cancel := context.WithTimeout(context.Background(), connect.DefaultConnectTimeout-time.Second)
				defer cancel()
				var out, errOut strings.Builder
				start := time.Now()
				code := run(ctx, append(append([]string{}, cmd...), "--dsn", d.dsn), &out, &errOut)
				took := time.Since(start)
				if code != exitFail || out.Len() != 0 {
					t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out.String())
				}
				if ctx.Err() != nil {
					t.Errorf("the caller's context ended the wait, after %v; want connect_timeout (1s) to end it", took.Round(time.Millisecond))
				}
				oneLine(t, errOut.String())
				if !strings.Contains(errOut.String(), "timeout") || strings.Contains(errOut.String(), secret) {
					t.Errorf("stderr %q; want a timeout, and no password", errOut.String())
				}
			})
		}
	}
}

// TestRequireDBPinsSearchPath: the connections that install and node
// open have search_path pg_catalog, pg_temp, whatever the database's
// default.
func TestRequireDBPinsSearchPath(t *testing.T) {
	dsn := pgtest.DSN(t)
	m := newMallory(t, dsn)
	m.setSearchPath(t, "public, pg_catalog")
	var out, errOut strings.Builder
	c := newCLI("node", nodeHelp, &out, &errOut)
	db, _, code, ok := c.requireDB(context.Background(), dsn)
	if !ok {
		t.Fatalf("requireDB: exit %d, %s", code, errOut.String())
	}
	defer db.Close()
	var got string
	if err := db.QueryRow("SHOW search_path").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != connect.SearchPath {
		t.Errorf("search_path %q; want %q", got, connect.SearchPath)
	}
}

// mallory is an unprivileged role with CREATE on schema public, who plants
// look-alikes of built-in functions there. Each look-alike records in
// public.<role>_log that it ran, as whoever called it, and then does what
// the original does, so that nothing else gives it away.
type mallory struct {
	role string
	conn *pgx.Conn // the superuser's own connection to the test database
}

// newMallory creates the role (pgtest.Role, which removes it and what it
// owns when t ends) and its log table in dsn's database.
func newMallory(t *testing.T, dsn string) *mallory {
	t.Helper()
	role := pgtest.Role(t, dsn, "mallory", "NOLOGIN")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	m := &mallory{role: role, conn: conn}
	m.exec(t, "GRANT USAGE, CREATE ON SCHEMA public TO "+m.role)
	m.as(t, "CREATE TABLE public."+m.role+"_log (fn text NOT NULL, caller name NOT NULL)")
	return m
}

func (m *mallory) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := m.conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// as runs sql as mallory.
func (m *mallory) as(t *testing.T, sql string) {
	t.Helper()
	m.exec(t, "SET ROLE "+m.role)
	m.exec(t, sql)
	m.exec(t, "RESET ROLE")
}

// plant creates public.<name>(<args>) returning <returns>, which logs its
// call and then returns <body>, an expression of its arguments $1...
func (m *mallory) plant(t *testing.T, name, args, returns, body string) {
	t.Helper()
	m.as(t, fmt.Sprintf(`CREATE FUNCTION public.%[1]s(%[2]s) RETURNS %[3]s LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO public.%[4]s_log VALUES (%[5]s, pg_catalog.session_user());
    RETURN %[6]s;
END
$fn$`, name, args, returns, m.role, quoteLiteral(name), body))
}

// ran returns the names of the look-alikes that ran, one per call.
func (m *mallory) ran(t *testing.T) []string {
	t.Helper()
	rows, _ := m.conn.Query(context.Background(), "SELECT fn FROM public."+m.role+"_log")
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// setSearchPath sets the database's default search_path, reset when t
// ends.
func (m *mallory) setSearchPath(t *testing.T, path string) {
	t.Helper()
	var db string
	if err := m.conn.QueryRow(context.Background(), "SELECT pg_catalog.current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	q := `"` + strings.ReplaceAll(db, `"`, `""`) + `"`
	m.exec(t, "ALTER DATABASE "+q+" SET search_path = "+path)
	t.Cleanup(func() { m.conn.Exec(context.Background(), "ALTER DATABASE "+q+" RESET search_path") })
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// TestInstallIgnoresLookAlikes is the attack on goose's session locker:
// it sends SELECT pg_try_advisory_lock($1) and pg_advisory_unlock($1)
// unqualified, so a role that may create in public can have its own
// functions run by the superuser who installs. With the default
// search_path pg_catalog is searched first, but a double precision
// look-alike still wins for the untyped $1 (float8 is numeric's preferred
// type); with public ahead of pg_catalog any look-alike wins. sfgen's
// connections pin search_path, so neither runs. (install.Apply also pins
// the sessions it and goose use, with set_config and its own locker, so
// this test fails only when both pins are gone; it did, with goose's stock
// locker.)
func TestInstallIgnoresLookAlikes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		searchPath string // the database's default; "" leaves the standard "$user", public
		argType    string
	}{
		{"default_path", "", "double precision"},
		{"public_first", "public, pg_catalog", "bigint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgtest.DSN(t)
			m := newMallory(t, dsn)
			m.plant(t, "pg_try_advisory_lock", "k "+tc.argType, "boolean", "pg_catalog.pg_try_advisory_lock(k::bigint)")
			m.plant(t, "pg_advisory_unlock", "k "+tc.argType, "boolean", "pg_catalog.pg_advisory_unlock(k::bigint)")
			if tc.searchPath != "" {
				m.setSearchPath(t, tc.searchPath)
			}
			_, schema := testSchema(t, dsn)
			code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", schema)
			if code != 0 || !strings.Contains(out, "applied ") {
				t.Fatalf("install = exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if ran := m.ran(t); len(ran) != 0 {
				t.Errorf("install ran mallory's %v as the superuser", ran)
			}
		})
	}
}

// TestVerifyIgnoresLookAlikes: with public ahead of pg_catalog in the
// database's search_path, a look-alike public.unnest(anyarray) would run
// on every batch of verify's checks that called unnest() unqualified.
// sfgen's pool pins search_path, and verify's queries qualify unnest() as
// well, so it does not; this test fails only when both are gone (it did,
// with the pin off and one check's unnest() unqualified).
func TestVerifyIgnoresLookAlikes(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter()})
	m := newMallory(t, dsn)
	m.as(t, fmt.Sprintf(`CREATE FUNCTION public.unnest(a anyarray) RETURNS SETOF anyelement LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO public.%[1]s_log VALUES ('unnest', pg_catalog.session_user());
    RETURN QUERY SELECT * FROM pg_catalog.unnest(a);
END
$fn$`, m.role))
	m.setSearchPath(t, "public, pg_catalog")
	code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--schema", schema, "--count", "200")
	if code != 0 {
		t.Fatalf("verify = exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if ran := m.ran(t); len(ran) != 0 {
		t.Errorf("verify ran mallory's %s %d times", ran[0], len(ran))
	}
}

// TestBenchIgnoresLookAlikes: bench measures the lag with the operator
// timestamptz - timestamptz, which no query can qualify without
// OPERATOR() syntax; with public ahead of pg_catalog, a look-alike
// public.- would run on every row. The bench's pool pins search_path, so
// it does not.
func TestBenchIgnoresLookAlikes(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter()})
	m := newMallory(t, dsn)
	m.plant(t, "mallory_minus", "a timestamptz, b timestamptz", "interval", "a OPERATOR(pg_catalog.-) b")
	m.as(t, "CREATE OPERATOR public.- (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = public.mallory_minus)")
	m.setSearchPath(t, "public, pg_catalog")
	code, out, errOut := sfgen(t, "bench", "--dsn", dsn, "--schema", schema, "--clients", "1", "--duration", "200ms", "--json")
	if code != 0 {
		t.Fatalf("bench = exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if ran := m.ran(t); len(ran) != 0 {
		t.Errorf("bench ran mallory's %s %d times", ran[0], len(ran))
	}
}

// TestShortPasswordsNotGarbled: the server's errors reach the user as the
// server wrote them when the password is a short word that also stands
// inside them (issue 43, item 6: the password was replaced wherever its
// letters stood). Each role's password is the one named, so that a server
// that asks for passwords lets it in.
func TestShortPasswordsNotGarbled(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Setenv("PGPASSWORD", "")
	t.Setenv("DATABASE_URL", "") // after pgtest, which may read it
	execAll(t, testDB(t, dsn), "CREATE TABLE orders (id bigint PRIMARY KEY, item text)")
	// as returns dsn as role, with password, at database db ("" keeps
	// dsn's).
	as := func(role, password, db string) string {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(role, password)
		if db != "" {
			u.Path = "/" + db
		}
		return u.String()
	}
	app := pgtest.Role(t, dsn, "app", "LOGIN PASSWORD 'app'")
	r := pgtest.Role(t, dsn, "r", "LOGIN PASSWORD 'r'")
	same := pgtest.Role(t, dsn, "same", "LOGIN")
	execAll(t, testDB(t, dsn), "ALTER ROLE "+same+" PASSWORD '"+same+"'") // the password is the role's name
	for _, tc := range []struct {
		name string
		args []string
		want string // in the one line on stderr, as the server said it
	}{
		{"app in a database's name", []string{"node", "--dsn", as(app, "app", "nosuchapp")}, `database "nosuchapp" does not exist`},
		{"r in every other word", []string{"audit", "--dsn", as(r, "r", ""), "--table", "orders"}, "ERROR: permission denied for table orders (SQLSTATE 42501)"},
		{"the role's name", []string{"node", "--dsn", as(same, same, "nosuch")}, "failed to connect to `user=" + same + " database=nosuch`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := sfgen(t, tc.args...)
			oneLine(t, errOut)
			if code != exitFail || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "xxxxx") {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and %q as it is", code, out, errOut, tc.want)
			}
		})
	}
}
