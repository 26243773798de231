package connect

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// secret is in every password of the tests' connection strings.
const secret = "Hunter2"

// badDSNs cannot be parsed. Most would make pgx's own error show the
// password, or a word of it.
var badDSNs = []struct {
	name, dsn, want string
}{
	{"keyword/value, bad port, space before =", "host=127.0.0.1 port=x password =Hunter2Secret",
		"cannot parse the connection string (keyword/value form): invalid port"},
	{"keyword/value, bad port, spaces around =", "host=127.0.0.1 port=x password = Hunter2Secret",
		"cannot parse the connection string (keyword/value form): invalid port"},
	{"keyword/value, bad port, quoted password with a space", "host=127.0.0.1 password = 'Hunter2 Secret' port=x",
		"cannot parse the connection string (keyword/value form): invalid port"},
	{"keyword/value, bad port, quoted password with an escaped quote", `host=127.0.0.1 password='Hunter2\'s' port=x`,
		"cannot parse the connection string (keyword/value form): invalid port"},
	{"keyword/value, unquoted password with a space", "host=127.0.0.1 password=Hunter2 Hunter2Tail port=5432",
		`cannot parse the connection string (keyword/value form): a keyword is not followed by "="`},
	{"keyword/value, unterminated quote", "host=127.0.0.1 password='Hunter2Secret",
		"cannot parse the connection string (keyword/value form): a quoted value has no closing quote"},
	{"keyword/value, bad connect_timeout", "host=127.0.0.1 password=Hunter2Secret connect_timeout=soon",
		"cannot parse the connection string (keyword/value form): invalid connect_timeout"},
	{"keyword/value, bad target_session_attrs", "password=Hunter2Secret target_session_attrs=Hunter2",
		"cannot parse the connection string (keyword/value form): unknown target_session_attrs value"},
	{"keyword/value, bad statement_cache_capacity", "password=Hunter2Secret statement_cache_capacity=Hunter2",
		"cannot parse the connection string (keyword/value form): cannot parse statement_cache_capacity"},
	{"garbage", "Hunter2Secret",
		"cannot parse the connection string (keyword/value form): want keyword=value pairs separated by spaces"},
	{"garbage with a NUL", "password=Hunter2\x00Secret",
		"cannot parse the connection string (keyword/value form): it contains a NUL byte"},
	{"URL, bad port", "postgres://app:Hunter2Secret@127.0.0.1:x/app",
		"cannot parse the connection string (URL form): invalid port"},
	{"URL, password in the query, bad port", "postgres://app@127.0.0.1:x/app?password=Hunter2Secret",
		"cannot parse the connection string (URL form): invalid port"},
	{"URL, password with a slash", "postgresql://app:Hunter2/Secret@127.0.0.1/app",
		"cannot parse the connection string (URL form): invalid port"},
	{"URL, password with a bad escape", "postgres://app:Hunter2%zzSecret@127.0.0.1/app",
		"cannot parse the connection string (URL form): a percent-escape is not % and two hex digits"},
	{"URL, host with a bad escape", "postgres://app:Hunter2Secret@Hunter2%zz/app",
		"cannot parse the connection string (URL form): a percent-escape is not % and two hex digits"},
	{"URL, query parameter without =", "postgres://app@127.0.0.1/app?Hunter2Secret",
		`cannot parse the connection string (URL form): a query parameter has no "="`},
	{"URL, password with a =", "postgres://app@127.0.0.1/app?password=Hunter2=Secret",
		`cannot parse the connection string (URL form): a query parameter has more than one "="`},
	{"URL, password with a space", "postgres://app:Hunter2 Secret@127.0.0.1/app",
		"cannot parse the connection string (URL form): a part has spaces inside it; write them as %20"},
	{"URL, unterminated IPv6 host", "postgres://app:Hunter2Secret@[::1/app",
		`cannot parse the connection string (URL form): an IPv6 host has no closing "]"`},
	{"URL, ports and hosts", "postgres://app:Hunter2Secret@a,b/app?port=1,2,3",
		"cannot parse the connection string (URL form): the number of ports does not match the number of hosts"},
	{"URL, bad pool_max_conns", "postgres://app:Hunter2Secret@127.0.0.1/app?pool_max_conns=Hunter2",
		"cannot parse the connection string (URL form): cannot parse pool_max_conns"},
}

// opener is one of the ways this package opens a connection, as a
// function that returns the error and closes what it opened.
type opener struct {
	name string
	open func(ctx context.Context, dsn string) error
}

var openers = []opener{
	{"Config", func(_ context.Context, dsn string) error { _, err := Config(dsn); return err }},
	{"PoolConfig", func(_ context.Context, dsn string) error { _, err := PoolConfig(dsn); return err }},
	{"OpenDB", func(ctx context.Context, dsn string) error {
		db, err := OpenDB(ctx, dsn)
		if err == nil {
			db.Close()
		}
		return err
	}},
	{"OpenPool", func(ctx context.Context, dsn string) error {
		pool, err := OpenPool(ctx, dsn)
		if err == nil {
			pool.Close()
		}
		return err
	}},
	{"Connect", func(ctx context.Context, dsn string) error {
		conn, err := Connect(ctx, dsn)
		if err == nil {
			conn.Close(ctx)
		}
		return err
	}},
}

// TestParseErrorsQuoteNothing: a connection string that cannot be parsed
// gets a fixed sentence that says what is wrong and quotes nothing of it,
// from every way of connecting.
func TestParseErrorsQuoteNothing(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	for _, tc := range badDSNs {
		for _, o := range openers {
			t.Run(tc.name+"/"+o.name, func(t *testing.T) {
				if strings.Contains(tc.name, "pool_") && (o.name == "Config" || o.name == "OpenDB" || o.name == "Connect") {
					t.Skip("pool_* settings are for pools; pgx passes them to the server")
				}
				err := o.open(context.Background(), tc.dsn)
				if err == nil {
					t.Fatal("no error")
				}
				if err.Error() != tc.want {
					t.Errorf("error %q; want %q", err, tc.want)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows the password: %q", err)
				}
				var pe *ParseError
				if !errors.Is(err, ErrBadDSN) || !errors.As(err, &pe) {
					t.Errorf("error %q is not a *ParseError matching ErrBadDSN", err)
				}
				if errors.Unwrap(err) != nil {
					t.Errorf("error unwraps to %q, which may quote the string", errors.Unwrap(err))
				}
			})
		}
	}
}

// FuzzParseErrorQuotesNothing: whatever the string, a parse error is one
// of the fixed sentences.
func FuzzParseErrorQuotesNothing(f *testing.F) {
	for _, tc := range badDSNs {
		f.Add(tc.dsn)
	}
	f.Add("postgres://u:p@h:5432/d?sslmode=bogus")
	f.Add("host=h sslcertmode=x")
	f.Add("host=h min_protocol_version=9")
	f.Add("host=h channel_binding=x")
	f.Add("host=h require_auth=x")
	f.Add("host=h default_query_exec_mode=x")
	f.Add("service=nosuch")
	reasons := map[string]bool{malformed: true, "the number of ports does not match the number of hosts": true}
	for _, s := range syntax {
		reasons[s.say] = true
	}
	for _, s := range settings {
		reasons[s] = true
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		for _, parse := range []func(string) error{
			func(s string) error { _, err := Config(s); return err },
			func(s string) error { _, err := PoolConfig(s); return err },
		} {
			err := parse(dsn)
			if err == nil {
				continue
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("%q: %T %q is not a *ParseError", dsn, err, err)
			}
			if pe.Form != "URL" && pe.Form != "keyword/value" || !reasons[pe.Reason] || err.Error() != fmt.Sprintf("cannot parse the connection string (%s form): %s", pe.Form, pe.Reason) {
				t.Fatalf("%q: error %q is not one of the fixed sentences", dsn, err)
			}
		}
	})
}

// TestParseErrorReasons: every phrase that parse.go matches is one that
// pgx still says, so that pgx rewording one shows here rather than as a
// vaguer "malformed" in the field.
func TestParseErrorReasons(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	for _, tc := range []struct{ dsn, want string }{
		{"host=h sslcertmode=x", "invalid sslcertmode"},
		{"host=h sslmode=bogus", "failed to configure TLS"},
		{"service=nosuch servicefile=/nonexistent", "failed to read service"},
		{"host=h min_protocol_version=9", "invalid min_protocol_version"},
		{"host=h max_protocol_version=9", "invalid max_protocol_version"},
		{"host=h min_protocol_version=3.2 max_protocol_version=3.0", "min_protocol_version cannot be greater than max_protocol_version"},
		{"host=h channel_binding=x", "unknown channel_binding value"},
		{"host=h require_auth=x", "invalid require_auth"},
		{"host=h description_cache_capacity=x", "cannot parse description_cache_capacity"},
		{"host=h default_query_exec_mode=x", "invalid default_query_exec_mode"},
		{"postgres://[]/d", "an IPv6 host is empty"},
		{"postgres://[::1]x/d", `an IPv6 host is followed by something other than ":" or "/"`},
		{"postgres://h/d%00", "a percent-escape is %00"},
	} {
		_, err := Config(tc.dsn)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Reason != tc.want {
			t.Errorf("Config(%q) = %v; want reason %q", tc.dsn, err, tc.want)
		}
	}
	for _, tc := range []struct{ dsn, want string }{
		{"host=h pool_max_conns=0", "pool_max_conns too small"},
		{"host=h pool_min_conns=x", "cannot parse pool_min_conns"},
		{"host=h pool_min_idle_conns=x", "cannot parse pool_min_idle_conns"},
		{"host=h pool_max_conn_lifetime=x", "cannot parse pool_max_conn_lifetime"},
		{"host=h pool_max_conn_lifetime_jitter=x", "cannot parse pool_max_conn_lifetime_jitter"},
		{"host=h pool_max_conn_idle_time=x", "cannot parse pool_max_conn_idle_time"},
		{"host=h pool_health_check_period=x", "cannot parse pool_health_check_period"},
		{"host=h pool_ping_timeout=x", "cannot parse pool_ping_timeout"},
	} {
		_, err := PoolConfig(tc.dsn)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Reason != tc.want {
			t.Errorf("PoolConfig(%q) = %v; want reason %q", tc.dsn, err, tc.want)
		}
	}
}

// TestConfig: search_path is pinned whatever the string asks for, and the
// connect timeout is the string's, else PGCONNECT_TIMEOUT's, else
// DefaultConnectTimeout.
func TestConfig(t *testing.T) {
	t.Setenv("PGCONNECT_TIMEOUT", "")
	for _, tc := range []struct {
		name, dsn, env string
		timeout        time.Duration
	}{
		{"URL", "postgres://app:pw@db.example/app", "", DefaultConnectTimeout},
		{"keyword/value", "host=db.example user=app password=pw", "", DefaultConnectTimeout},
		{"URL, connect_timeout", "postgres://app@db.example/app?connect_timeout=3", "", 3 * time.Second},
		{"keyword/value, connect_timeout", "host=db.example connect_timeout=1", "", time.Second},
		{"connect_timeout=0 waits no longer than the default", "host=db.example connect_timeout=0", "", DefaultConnectTimeout},
		{"PGCONNECT_TIMEOUT", "host=db.example", "4", 4 * time.Second},
		{"URL, search_path", "postgres://app@db.example/app?search_path=public", "", DefaultConnectTimeout},
		{"keyword/value, search_path", "host=db.example search_path='public, pg_catalog'", "", DefaultConnectTimeout},
		{"several hosts", "postgres://app@a.example,b.example/app", "", DefaultConnectTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PGCONNECT_TIMEOUT", tc.env)
			cfg, err := Config(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			pcfg, err := PoolConfig(tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			for name, c := range map[string]*pgx.ConnConfig{"Config": cfg, "PoolConfig": pcfg.ConnConfig} {
				if got := c.RuntimeParams["search_path"]; got != SearchPath {
					t.Errorf("%s: search_path %q; want %q", name, got, SearchPath)
				}
				if c.ConnectTimeout != tc.timeout {
					t.Errorf("%s: connect timeout %v; want %v", name, c.ConnectTimeout, tc.timeout)
				}
			}
		})
	}
}

// silentServer listens on 127.0.0.1 and accepts connections, and never
// says a word on them. It returns its port.
func silentServer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// TestSilentServer: a server that accepts TCP and never answers makes
// every way of connecting fail after connect_timeout, not hang.
func TestSilentServer(t *testing.T) {
	port := silentServer(t)
	for _, d := range []struct{ form, dsn string }{
		{"URL", fmt.Sprintf("postgres://app:%sSecret@127.0.0.1:%d/app?connect_timeout=1", secret, port)},
		{"keyword/value", fmt.Sprintf("host=127.0.0.1 port=%d user=app password=%sSecret connect_timeout=1", port, secret)},
	} {
		for _, o := range openers[2:] {
			t.Run(d.form+"/"+o.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
				defer cancel()
				err := o.open(ctx, d.dsn)
				if err == nil {
					t.Fatal("connected to a server that says nothing")
				}
				if ctx.Err() != nil {
					t.Errorf("waited until the caller's context ended; want connect_timeout (1s) to end the wait: %v", err)
				}
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout") {
					t.Errorf("error %q does not say it timed out", err)
				}
				if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q shows the password or spans lines", err)
				}
			})
		}
	}
}

// TestSilentServerDefaultTimeout is TestSilentServer without a
// connect_timeout: DefaultConnectTimeout ends the wait.
func TestSilentServerDefaultTimeout(t *testing.T) {
	if testing.Short() {
		t.Skipf("waits %v", DefaultConnectTimeout)
	}
	t.Setenv("PGCONNECT_TIMEOUT", "")
	port := silentServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*DefaultConnectTimeout)
	defer cancel()
	start := time.Now()
	_, err := OpenDB(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=app", port))
	took := time.Since(start)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v; want a timeout", err)
	}
	// At least the default (waiting longer is the machine's doing), and
	// ended by it rather than by the caller's context.
	if took < DefaultConnectTimeout-time.Second || ctx.Err() != nil {
		t.Errorf("gave up after %v (caller's context: %v); want DefaultConnectTimeout, %v, to end the wait", took.Round(time.Millisecond), ctx.Err(), DefaultConnectTimeout)
	}
}

// TestRedact: one line, each line once, and no spelling of the password.
func TestRedact(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	for _, tc := range []struct {
		name, dsn, err, want string
	}{
		{"URL", "postgres://app:Hunter2@h/app", "cannot parse `postgres://app:Hunter2@h/app`: x", "cannot parse `postgres://app:xxxxx@h/app`: x"},
		{"URL, escaped", "postgres://app:Hunter2%20x@h/app", "a postgres://app:Hunter2%20x@h/app b", "a postgres://app:xxxxx@h/app b"},
		{"URL, query", "postgres://app@h/app?password=Hunter2", "a postgres://app@h/app?password=Hunter2&sslmode=x", "a postgres://app@h/app?password=xxxxx&sslmode=x"},
		{"keyword/value, quoted with a space", "host=h password = 'Hunter2 x'", "cannot parse `host=h password = 'Hunter2 x'`", "cannot parse `host=h password = 'xxxxx'`"},
		{"keyword/value, escaped quote", `host=h password='Hunter2\'s'`, `a host=h password='Hunter2\'s' b`, `a host=h password='xxxxx' b`},
		{"lines", "host=h password=Hunter2", "attempt 1: password=Hunter2\n  attempt 2: refused\nattempt 1: password=Hunter2\n", "attempt 1: password=xxxxx attempt 2: refused"},
		// Elsewhere the same letters stay: never inside other words.
		{"inside a word", "postgres://app:app@h/nosuchapp", `database "nosuchapp" does not exist`, `database "nosuchapp" does not exist`},
		{"a short one", "postgres://u:r@h/db", "permission denied for function snowflake_next_id", "permission denied for function snowflake_next_id"},
		{"the user's name", "postgres://postgres:postgres@h/db", "failed to connect to `user=postgres database=db`", "failed to connect to `user=postgres database=db`"},
		{"no password", "host=h", "a\nb", "a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Redact(errors.New(tc.err), tc.dsn); got != tc.want {
				t.Errorf("Redact(%q) = %q; want %q", tc.err, got, tc.want)
			}
		})
	}
	t.Run("PGPASSWORD", func(t *testing.T) {
		t.Setenv("PGPASSWORD", "Hunter2env")
		if got := Redact(errors.New("a password=Hunter2env"), "host=h"); got != "a password=xxxxx" {
			t.Errorf("Redact = %q; want the password from PGPASSWORD removed", got)
		}
	})
	if got := Redact(nil, "host=h"); got != "" {
		t.Errorf("Redact(nil) = %q", got)
	}
}

// TestServerErrorsNotGarbled: an error from the server that names a
// database whose name holds the password inside it keeps the name as it
// is, from every way of connecting, on one line, and never shows the
// password as the DSN's.
func TestServerErrorsNotGarbled(t *testing.T) {
	dsn := pgtest.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// A role whose password is pw, so that the login succeeds on a server
	// that asks for one and the error is the missing database's.
	const pw = secret + "Secret"
	role := pgtest.Role(t, dsn, "redact", "LOGIN PASSWORD '"+pw+"'")
	u.User = url.UserPassword(role, pw)
	u.Path = "/nosuch" + pw
	for _, o := range openers[2:] {
		t.Run(o.name, func(t *testing.T) {
			err := o.open(context.Background(), u.String())
			if err == nil {
				t.Fatal("connected to a database that does not exist")
			}
			if !strings.Contains(err.Error(), `database "nosuch`+pw+`" does not exist`) {
				t.Errorf("error %q; want the database's name as it is", err)
			}
			if strings.Contains(err.Error(), ":"+pw+"@") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q shows the password as the DSN's, or spans lines", err)
			}
		})
	}
}

// TestSearchPathPinned: however the database, the role or the string set
// search_path, each connection this package opens has SearchPath from
// its first query on, so an unqualified name never finds a look-alike in
// public.
func TestSearchPathPinned(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var db string
	if err := admin.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`ALTER DATABASE "` + db + `" SET search_path = public, pg_catalog`,
		`CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE sql AS $$ SELECT 'look-alike' $$`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		admin.Exec(ctx, `ALTER DATABASE "`+db+`" RESET search_path`)
		admin.Exec(ctx, `DROP FUNCTION public.lower(text)`)
	})
	// The attack works on a connection that does not pin search_path.
	plain, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	plain.QueryRow(ctx, "SELECT lower('X')").Scan(&got)
	plain.Close(ctx)
	if got != "look-alike" {
		t.Fatalf("the look-alike does not work on a plain connection: lower('X') = %q", got)
	}

	// query runs one query on a connection opened each way.
	type queryer func(ctx context.Context, dsn, sql string) (string, error)
	for _, q := range []struct {
		name  string
		query queryer
	}{
		{"OpenDB", func(ctx context.Context, dsn, q string) (s string, err error) {
			var db *sql.DB
			if db, err = OpenDB(ctx, dsn); err != nil {
				return "", err
			}
			defer db.Close()
			err = db.QueryRowContext(ctx, q).Scan(&s)
			return s, err
		}},
		{"OpenPool", func(ctx context.Context, dsn, q string) (s string, err error) {
			var pool *pgxpool.Pool
			if pool, err = OpenPool(ctx, dsn); err != nil {
				return "", err
			}
			defer pool.Close()
			err = pool.QueryRow(ctx, q).Scan(&s)
			return s, err
		}},
		{"Connect", func(ctx context.Context, dsn, q string) (s string, err error) {
			var conn *pgx.Conn
			if conn, err = Connect(ctx, dsn); err != nil {
				return "", err
			}
			defer conn.Close(ctx)
			err = conn.QueryRow(ctx, q).Scan(&s)
			return s, err
		}},
	} {
		for _, d := range []struct{ name, dsn string }{
			{"database default", dsn},
			{"search_path in the URL", dsn + "&search_path=public"},
			{"search_path in options", dsn + "&options=-c%20search_path%3Dpublic"},
		} {
			t.Run(q.name+"/"+d.name, func(t *testing.T) {
				for query, want := range map[string]string{
					"SHOW search_path":  SearchPath,
					"SELECT lower('X')": "x",
				} {
					got, err := q.query(ctx, d.dsn, query)
					if err != nil {
						t.Fatalf("%s: %v", query, err)
					}
					if got != want {
						t.Errorf("%s = %q; want %q", query, got, want)
					}
				}
			})
		}
	}
}

// refusingServer listens on a TCP port of its own and answers every
// connection as a server without TLS whose database does not exist: 'N'
// to an SSLRequest, then a FATAL 3D000 to the startup message.
func refusingServer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := pgproto3.NewBackend(c, c)
				for {
					msg, err := b.ReceiveStartupMessage()
					if err != nil {
						return
					}
					if _, ok := msg.(*pgproto3.SSLRequest); ok {
						if _, err := c.Write([]byte("N")); err != nil {
							return
						}
						continue
					}
					b.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "3D000", Message: `database "nosuchdb" does not exist`})
					b.Flush()
					return
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().(*net.TCPAddr).Port
}

// TestServerAnswerLeads: with sslmode=prefer (the default) pgx tries TLS,
// which the server refuses, and then plain text, which the server answers
// with its error; the error says the server's answer alone, not the TLS
// attempt first. With sslmode=require the TLS refusal is the cause.
func TestServerAnswerLeads(t *testing.T) {
	port := refusingServer(t)
	for _, o := range openers[2:] {
		t.Run(o.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			err := o.open(ctx, fmt.Sprintf("postgres://app:%sSecret@127.0.0.1:%d/nosuchdb", secret, port))
			want := fmt.Sprintf("failed to connect to `user=app database=nosuchdb`: 127.0.0.1:%d (127.0.0.1): server error: FATAL: database \"nosuchdb\" does not exist (SQLSTATE 3D000)", port)
			if err == nil || err.Error() != want {
				t.Errorf("error %q;\nwant %q", err, want)
			}
			err = o.open(ctx, fmt.Sprintf("postgres://app@127.0.0.1:%d/nosuchdb?sslmode=require", port))
			if err == nil || !strings.Contains(err.Error(), "tls error: server refused TLS connection") {
				t.Errorf("sslmode=require: error %q; want the TLS refusal", err)
			}
		})
	}
}

// TestAtAddress moves a configuration to another host and port (a Citus
// worker's) and keeps the rest: user, password, database, the pinned
// search_path; TLS verifies the new host, and the other hosts are gone.
func TestAtAddress(t *testing.T) {
	cfg, err := Config("postgres://app:secret@db1:5432,db2:5433/orders?sslmode=verify-full&application_name=x")
	if err != nil {
		t.Fatal(err)
	}
	got := AtAddress(cfg, "worker-1", 6432)
	if got.Host != "worker-1" || got.Port != 6432 || got.Fallbacks != nil ||
		got.User != "app" || got.Password != "secret" || got.Database != "orders" ||
		got.RuntimeParams["search_path"] != SearchPath || got.RuntimeParams["application_name"] != "x" {
		t.Errorf("AtAddress: host %q port %d fallbacks %d user %q database %q params %v", got.Host, got.Port, len(got.Fallbacks), got.User, got.Database, got.RuntimeParams)
	}
	if got.TLSConfig == nil || got.TLSConfig.ServerName != "worker-1" {
		t.Errorf("TLS server name %v; want worker-1", got.TLSConfig)
	}
	if cfg.Host != "db1" || cfg.TLSConfig.ServerName != "db1" || len(cfg.Fallbacks) == 0 {
		t.Errorf("AtAddress changed its argument: host %q, TLS %q, %d fallbacks", cfg.Host, cfg.TLSConfig.ServerName, len(cfg.Fallbacks))
	}
}

// TestOtherSchemeNamed: another database's URL is refused naming its
// scheme and what is wanted, not as malformed keyword=value pairs, and
// quotes nothing else of the string.
func TestOtherSchemeNamed(t *testing.T) {
	for _, dsn := range []string{"mysql://app:Hunter2@h/db", "sqlserver://h"} {
		_, err := Config(dsn)
		scheme, _, _ := strings.Cut(dsn, "://")
		if want := "cannot parse the connection string (URL form): the scheme " + scheme + ":// is not PostgreSQL's: want postgres:// or postgresql://, or keyword=value pairs"; err == nil || err.Error() != want {
			t.Errorf("Config(%q) = %v; want %q", dsn, err, want)
		}
	}
}
