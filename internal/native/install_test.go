package native_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// definition is what pg_proc says of schema.name(): its language, body and
// owner; "" when there is no such function.
func definition(t *testing.T, conn *pgx.Conn, schema, name string) string {
	t.Helper()
	if !strings.Contains(name, "(") {
		name += "()"
	}
	var def string
	err := conn.QueryRow(context.Background(), `SELECT l.lanname || ' ' || p.proowner::regrole::text || ' ' || coalesce(p.probin, '') || ' ' || p.prosrc || ' ' || coalesce(pg_get_function_sqlbody(p.oid), '')
		FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.oid = to_regprocedure($1)`,
		fmt.Sprintf("%q.%s", schema, name)).Scan(&def)
	if errors.Is(err, pgx.ErrNoRows) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// TestInstallRefuses: Install refuses, with its sentinel error and a
// message that says why, a role that is not a superuser, a schema without
// sfgen, a schema of another layout, a library the server cannot load and
// a relative path; each time snowflake_next_id() is as it was, the SQL
// one, and nothing is left behind.
func TestInstallRefuses(t *testing.T) {
	so := library(t, tw)
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	installScript(t, conn, sqlgen.Options{Layout: snowflake.Twitter()})
	installScript(t, conn, sqlgen.Options{Layout: snowflake.Discord(), Schema: "discord"})
	mustExec(t, conn, "CREATE SCHEMA empty")
	// A schema whose guard another role owns: Install refuses it before it
	// replaces anything, as catalog.Inspect finds it untrusted.
	installScript(t, conn, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "alien", Machine: 1}) // a node of its own
	stranger := pgtest.Role(t, dsn, "native_stranger", "")
	mustExec(t, conn, "ALTER SEQUENCE alien.snowflake_caught_up OWNER TO "+stranger)
	_, appDSN := pgtest.LoginRole(t, dsn, "native_installer", "")
	app := connect(t, appDSN)
	ctx := context.Background()
	for _, c := range []struct {
		name, schema, library string
		conn                  *pgx.Conn
		want                  error
		says                  string
	}{
		{"not a superuser", "public", so, app, native.ErrNotSuperuser, "cannot create a C function"},
		{"no sfgen", "empty", so, conn, native.ErrNotInstalled, "schema empty holds no sfgen"},
		{"no schema", "missing", so, conn, native.ErrNotInstalled, "schema missing holds no sfgen"},
		{"another layout", "discord", so, conn, native.ErrLayout, "epoch=1420070400000"},
		{"objects not sfgen's", "alien", so, conn, catalog.ErrUntrusted, "sequence alien.snowflake_caught_up owned by " + stranger},
		{"not loadable", "public", filepath.Join(filepath.Dir(so), "missing.so"), conn, native.ErrLoad, "missing.so"},
		{"relative path", "public", "sfgen_native.so", conn, nil, "not absolute"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := definition(t, conn, c.schema, native.FunctionName)
			relations := pgtest.Relations(t, conn)
			for _, install := range []func(context.Context, *pgx.Conn, string, string) error{native.Install, native.InstallSideBySide} {
				err := install(ctx, c.conn, c.schema, c.library)
				if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.says) {
					t.Errorf("install: %v; want %v saying %q", err, c.want, c.says)
				}
				if after := definition(t, conn, c.schema, native.FunctionName); after != before {
					t.Errorf("after a refused install, snowflake_next_id() is\n%s\nwas\n%s", after, before)
				}
				if def := definition(t, conn, c.schema, native.SideBySideName); def != "" {
					t.Errorf("after a refused install, %s() exists: %s", native.SideBySideName, def)
				}
				if got := pgtest.Relations(t, conn); !slices.Equal(got, relations) {
					t.Errorf("after a refused install, relations %v, were %v", got, relations)
				}
			}
		})
	}
	// The connection is usable after a refusal, outside a transaction.
	if n := queryInt(t, app, "SELECT 1"); n != 1 || app.PgConn().TxStatus() != 'I' {
		t.Fatalf("after a refused install, the connection's status is %c", app.PgConn().TxStatus())
	}
}

// TestInstallOwnerAndUninstall: a schema whose sfgen objects a role that
// is not a superuser owns: a superuser installs the native generator
// (which that role then owns: the C code uses only its owner's objects),
// and Uninstall, by the superuser or by the owner, puts the SQL one back,
// with the node and the state kept (IDs go on increasing) and the side by
// side function gone.
// TestInstallWithNoNodeSet: Install over a schema that has no node yet
// (the usual first install from migrations) succeeds: the C function is
// in place, refuses with the SQL generator's SF201 until a node is set,
// and then makes IDs with it.
func TestInstallWithNoNodeSet(t *testing.T) {
	so := library(t, tw)
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true})
	if err := native.Install(context.Background(), conn, "public", so); err != nil {
		t.Fatalf("Install with no node set: %v", err)
	}
	if lib, err := native.InstalledLibrary(context.Background(), conn, "public"); err != nil || lib != so {
		t.Fatalf("InstalledLibrary = %q, %v; want %s", lib, err, so)
	}
	_, err := conn.Exec(context.Background(), "SELECT snowflake_next_id()")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "SF201" {
		t.Fatalf("with no node set: %v; want SF201", err)
	}
	mustExec(t, conn, "SELECT snowflake_set_node(7, 8)")
	if d, err := tw.Decompose(snowflake.ID(queryInt(t, conn, "SELECT snowflake_next_id()"))); err != nil || d.Datacenter != 7 || d.Machine != 8 {
		t.Fatalf("after snowflake_set_node(7, 8): %+v, %v", d, err)
	}
}

func TestInstallOwnerAndUninstall(t *testing.T) {
	so := library(t, tw)
	dsn := pgtest.DSN(t)
	super := connect(t, dsn)
	owner, ownerDSN := pgtest.LoginRole(t, dsn, "native_owner", "")
	mustExec(t, super, "CREATE SCHEMA ids AUTHORIZATION "+owner)
	// The script's CREATE SCHEMA IF NOT EXISTS checks this privilege.
	mustExec(t, super, "DO $$BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO "+owner+"', current_database()); END$$")
	own := connect(t, ownerDSN)
	installScript(t, own, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 11, Machine: 22})
	sqlDef := definition(t, super, "ids", native.FunctionName)
	mustExec(t, own, "CREATE TABLE ids.t (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id())")
	ctx := context.Background()
	var last int64
	next := func(c *pgx.Conn, what string) {
		t.Helper()
		id := queryInt(t, c, "INSERT INTO ids.t DEFAULT VALUES RETURNING id")
		if d, _ := tw.Decompose(snowflake.ID(id)); id <= last || d.Datacenter != 11 || d.Machine != 22 {
			t.Fatalf("%s: ID %d (node %d/%d) after %d; want a greater one of node 11/22", what, id, d.Datacenter, d.Machine, last)
		}
		last = id
	}
	next(own, "SQL")
	for _, uninstaller := range []struct {
		name string
		conn *pgx.Conn
	}{{"superuser", super}, {"owner", own}} {
		t.Run(uninstaller.name, func(t *testing.T) {
			for _, install := range []func(context.Context, *pgx.Conn, string, string) error{native.Install, native.InstallSideBySide} {
				if err := install(ctx, super, "ids", so); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range []string{native.CFunction, native.SideBySideName} {
				if def := definition(t, super, "ids", name); !strings.HasPrefix(def, "c "+owner+" "+so+" sfgen_next_id") {
					t.Fatalf("after install, ids.%s is %q; want the C function owned by %s", name, def, owner)
				}
			}
			if def, want := definition(t, super, "ids", native.FunctionName), "sql "+owner+`  SELECT "ids".snowflake_next_id_c(0) `; def != want {
				t.Fatalf("after install, ids.snowflake_next_id() is %q; want %q", def, want)
			}
			if def := definition(t, super, "ids", native.Missing); !strings.HasPrefix(def, "plpgsql "+owner+" ") {
				t.Fatalf("after install, ids.%s is %q; want the PL/pgSQL one owned by %s", native.Missing, def, owner)
			}
			next(own, "native, by the column default")
			next(super, "native, as the superuser")
			if err := native.Uninstall(ctx, uninstaller.conn, "ids"); err != nil {
				t.Fatal(err)
			}
			if def := definition(t, super, "ids", native.FunctionName); def != sqlDef {
				t.Fatalf("after uninstall, ids.snowflake_next_id() is\n%s\nwant the SQL one\n%s", def, sqlDef)
			}
			for _, name := range []string{native.SideBySideName, native.CFunction, native.Missing} {
				if def := definition(t, super, "ids", name); def != "" {
					t.Fatalf("after uninstall, ids.%s is still there: %s", name, def)
				}
			}
			var user string
			if err := uninstaller.conn.QueryRow(ctx, "SELECT current_user::text").Scan(&user); err != nil || (uninstaller.name == "superuser" && user == owner) {
				t.Fatalf("after uninstall the session is %q (%v): its role was not reset", user, err)
			}
			next(own, "SQL again")
			// Again: nothing to do.
			if err := native.Uninstall(ctx, uninstaller.conn, "ids"); err != nil {
				t.Fatalf("uninstall again: %v", err)
			}
		})
	}
}

// TestBuildRefuses: Build says which of pg_config, the server headers and
// the compiler is missing.
func TestBuildRefuses(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "pg_config")
	// A pg_config whose server include directory has no postgres.h.
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho "+dir+"/noinclude\necho gcc\necho 'PostgreSQL 15.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// One with headers, whose compiler is nowhere.
	if err := os.MkdirAll(filepath.Join(dir, "include"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "include", "postgres.h"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	noCC := filepath.Join(dir, "pg_config_nocc")
	if err := os.WriteFile(noCC, []byte("#!/bin/sh\necho "+dir+"/include\necho 'sfgen-no-such-cc -O2'\necho 'PostgreSQL 15.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, pgConfig string
		want           error
		says           string
	}{
		{"no pg_config", filepath.Join(dir, "missing", "pg_config"), native.ErrNoPGConfig, "missing/pg_config"},
		{"no headers", fake, native.ErrNoHeaders, "postgresql-server-dev"},
		{"no compiler", noCC, native.ErrNoToolchain, "sfgen-no-such-cc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := native.Build(context.Background(), filepath.Join(dir, "out"), tw, native.WithPGConfig(c.pgConfig))
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Build: %v; want %v saying %q", err, c.want, c.says)
			}
		})
	}
	t.Setenv("PG_CONFIG", filepath.Join(dir, "nowhere"))
	if _, err := native.FindPGConfig(); !errors.Is(err, native.ErrNoPGConfig) || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("FindPGConfig with $PG_CONFIG missing: %v", err)
	}
}

// protocol returns the parts of a release's script that make up the
// state protocol: the state and guard sequences, snowflake_next_state()
// (which the C code calls for its slow path) and snowflake_next_id()'s
// skeleton.
func protocol(t *testing.T, release int) []string {
	t.Helper()
	script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter()}, release)
	if err != nil {
		t.Fatal(err)
	}
	s := string(script)
	var parts []string
	for _, p := range []struct{ from, to string }{
		{`CREATE SEQUENCE IF NOT EXISTS "public".snowflake_state`, ";"},
		{`CREATE UNLOGGED SEQUENCE IF NOT EXISTS "public".snowflake_caught_up`, ";"},
		{`CREATE OR REPLACE FUNCTION "public".snowflake_next_state()`, "$fn$;"},
		{`CREATE OR REPLACE FUNCTION "public".snowflake_next_id()`, ";\n"},
	} {
		i := strings.Index(s, p.from)
		if i < 0 {
			t.Fatalf("release %d's script has no %s", release, p.from)
		}
		j := strings.Index(s[i:], p.to)
		part := s[i : i+j+len(p.to)]
		switch {
		case strings.Contains(p.from, "snowflake_next_id()"):
			part = fastPathSkeleton(part)
		case strings.Contains(p.from, "snowflake_next_state()"):
			part = slowPathSkeleton(part)
		}
		parts = append(parts, part)
	}
	return parts
}

// slowPathSkeleton keeps of snowflake_next_state() the lines that make
// its part of the protocol, which the C code's slow path calls: its
// signature and privileges, and every read and write of the sequences and
// the turn (the guard read before the state, the guard at 0 while a
// catch-up moves the state, the turn's row lock). An error path that ends
// a wait that could not end (release 8's SF205) is not the protocol.
func slowPathSkeleton(part string) string {
	var keep []string
	for _, line := range strings.Split(part, "\n") {
		line = strings.TrimSpace(line)
		for _, mark := range []string{"CREATE OR REPLACE FUNCTION", "RETURNS", "SECURITY DEFINER", "SET search_path",
			"CONSTANT pg_catalog.regclass", "pg_sequence_last_value(", "nextval(", "setval(", "FOR UPDATE SKIP LOCKED"} {
			if strings.Contains(line, mark) {
				keep = append(keep, line)
				break
			}
		}
	}
	return strings.Join(keep, "\n")
}

// fastPathSkeleton keeps of snowflake_next_id() the lines that make its
// part of the protocol: the guard read in CASE's condition, before the
// nextval() of the state, and the slow path otherwise. How it composes
// the ID from the state (release 6 changed that; the verify and generator
// tests hold every release to the Go composer) and when it finds a
// catch-up due (TestHeaderMatchesSQL holds the C code's window to the
// SQL's) are not the protocol.
func fastPathSkeleton(part string) string {
	var keep []string
	for _, line := range strings.Split(part, "\n") {
		line = strings.TrimSpace(line)
		for _, mark := range []string{"WHEN pg_catalog.clock_timestamp() OPERATOR(pg_catalog.<) pg_catalog.to_timestamp(",
			`(pg_catalog.pg_sequence_last_value('"public".snowflake_caught_up'::pg_catalog.regclass)::pg_catalog.float8`,
			`THEN pg_catalog.nextval('"public".snowflake_state'::pg_catalog.regclass)`, `ELSE "public".snowflake_next_state()`} {
			if line == mark {
				keep = append(keep, line)
			}
		}
	}
	return strings.Join(keep, "\n")
}

// TestReleasesShareTheProtocol: every release the native generator
// installs over (native.Releases, those sqlgen renders) has release 7's
// state objects and slow path byte for byte, and its fast path's
// skeleton (fastPathSkeleton): the C code follows that one protocol. A release that changes it fails here, until
// the C code follows it too.
func TestReleasesShareTheProtocol(t *testing.T) {
	want := protocol(t, native.Release)
	for _, r := range native.Releases {
		if r > sqlgen.Latest {
			continue
		}
		if got := protocol(t, r); !slices.Equal(got, want) {
			t.Errorf("release %d's state protocol differs from release %d's, which the C code follows:\n%s\nwant\n%s",
				r, native.Release, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestHeaderMatchesSQL: the header's numbers are the ones the SQL of the
// same layout is rendered with, read from the SQL's text.
func TestHeaderMatchesSQL(t *testing.T) {
	other, err := snowflake.NewLayout(1600000000000, 41, 6, 6, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []snowflake.Layout{tw, snowflake.Discord(), other} {
		h, err := native.Header(l)
		if err != nil {
			t.Fatal(err)
		}
		script, err := released.Script(sqlgen.Options{Layout: l}, native.Release)
		if err != nil {
			t.Fatal(err)
		}
		def := func(name string) string {
			m := regexp.MustCompile(`(?m)^#define ` + name + ` (?:INT64CONST\()?(-?\d+)\)?$`).FindStringSubmatch(string(h))
			if m == nil {
				t.Fatalf("layout %s: no #define %s in the header", l, name)
			}
			return m[1]
		}
		for _, c := range []struct{ sql, what string }{
			{"MAXVALUE " + def("SF_MAX_STATE") + " START WITH 0", "the state's MAXVALUE"},
			{"OPERATOR(pg_catalog.-) " + def("SF_MIN_STATE") + ")::bit(", "the state of the first ID"},
			{"snowflake_caught_up'::pg_catalog.regclass)::pg_catalog.float8\n                    OPERATOR(pg_catalog./) 1000)", "the fast path's deadline, the guard itself"},
			{"::bit(" + def("SF_NODE_BITS") + ")", "the node's width"},
			{"state OPERATOR(pg_catalog.>>) " + def("SF_SEQUENCE_BITS"), "the sequence's width"},
			{"'" + l.String() + "'", "the layout"},
		} {
			if !strings.Contains(string(script), c.sql) {
				t.Errorf("layout %s: %s: the SQL has no %q", l, c.what, c.sql)
			}
		}
		if got, want := def("SF_TIMESTAMP_SHIFT"), fmt.Sprint(l.Shift(snowflake.FieldTimestamp)); got != want {
			t.Errorf("layout %s: SF_TIMESTAMP_SHIFT %s, want %s", l, got, want)
		}
	}
}

// TestNativeOwnObjectsOnly: the C code finds its objects in its own
// schema, whatever search_path says and whatever look-alikes other
// schemas hold, and refuses an object of its name there that another role
// owns (not sfgen's), saying so; the SQL one, bound at CREATE time, is not
// affected either way.
func TestNativeOwnObjectsOnly(t *testing.T) {
	dsn, conn := setup(t, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 3, Machine: 4}, false)
	mustExec(t, conn, `CREATE SCHEMA evil;
		CREATE SEQUENCE evil.snowflake_state; CREATE SEQUENCE evil.snowflake_caught_up;
		SELECT setval('evil.snowflake_caught_up', 1);
		CREATE FUNCTION evil.snowflake_next_state() RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint';
		CREATE FUNCTION evil.snowflake_node_bits() RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'`)
	c := connect(t, dsn)
	mustExec(t, c, "SET search_path = evil, public, pg_catalog")
	before := queryInt(t, conn, "SELECT last_value FROM evil.snowflake_state")
	var last int64
	for i := 0; i < 100; i++ {
		id := queryInt(t, c, "SELECT public.snowflake_next_id()")
		if d, _ := tw.Decompose(snowflake.ID(id)); id <= last || d.Datacenter != 3 || d.Machine != 4 {
			t.Fatalf("with look-alikes first in search_path: ID %d (node %d/%d) after %d", id, d.Datacenter, d.Machine, last)
		}
		last = id
	}
	if after := queryInt(t, conn, "SELECT last_value FROM evil.snowflake_state"); after != before {
		t.Fatalf("the look-alike state moved from %d to %d", before, after)
	}
	// An object under sfgen's name that another role owns.
	other := pgtest.Role(t, dsn, "native_other", "")
	mustExec(t, conn, "ALTER SEQUENCE public.snowflake_caught_up OWNER TO "+other)
	_, err := c.Exec(context.Background(), "SELECT public.snowflake_next_id()")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "not sfgen's") || !strings.Contains(pe.Message, other) {
		t.Fatalf("with the guard owned by %s: %v; want 42501 saying it is not sfgen's", other, err)
	}
	mustExec(t, conn, "ALTER SEQUENCE public.snowflake_caught_up OWNER TO CURRENT_USER")
	if id := queryInt(t, c, "SELECT public.snowflake_next_id()"); id <= last {
		t.Fatalf("after the owner is put back: ID %d after %d", id, last)
	}
}

// TestInstallWhileInserting: sessions insert with DEFAULT
// snowflake_next_id() (prepared, so their plans are invalidated at each
// switch) while the function is switched from SQL to C and back, again
// and again: no insert fails but one the instant a switch back drops the
// C functions (XX000, "cache lookup failed for function": PostgreSQL
// takes no lock on a function, docs/native.md), each session goes on
// inserting, and no ID repeats.
func TestInstallWhileInserting(t *testing.T) {
	so := library(t, tw)
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	installScript(t, conn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 6, Machine: 7})
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), w int NOT NULL)")
	ctx := context.Background()
	var (
		wg       sync.WaitGroup
		stop     atomic.Bool
		inserted atomic.Int64
		dropped  atomic.Int64 // inserts that ran into a drop of the C functions
		errMu    sync.Mutex
		firstErr error
	)
	for w := 0; w < 4; w++ {
		c := connect(t, dsn)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for !stop.Load() {
				var id int64
				if err := c.QueryRow(ctx, "INSERT INTO t(w) VALUES ($1) RETURNING id", w).Scan(&id); err != nil {
					var pe *pgconn.PgError
					if errors.As(err, &pe) && pe.Code == "XX000" && strings.HasPrefix(pe.Message, "cache lookup failed for function") {
						dropped.Add(1)
						continue
					}
					errMu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("session %d: %w", w, err)
					}
					errMu.Unlock()
					stop.Store(true)
					return
				}
				if d, _ := tw.Decompose(snowflake.ID(id)); d.Datacenter != 6 || d.Machine != 7 {
					errMu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("session %d: ID %d of node %d/%d", w, id, d.Datacenter, d.Machine)
					}
					errMu.Unlock()
					stop.Store(true)
					return
				}
				inserted.Add(1)
			}
		}(w)
	}
	for i := 0; i < 5 && !stop.Load(); i++ {
		if err := native.Install(ctx, conn, "public", so); err != nil {
			t.Errorf("install %d: %v", i, err)
			break
		}
		for n := inserted.Load(); inserted.Load() < n+500 && !stop.Load(); {
			time.Sleep(time.Millisecond)
		}
		if err := native.Uninstall(ctx, conn, "public"); err != nil {
			t.Errorf("uninstall %d: %v", i, err)
			break
		}
		for n := inserted.Load(); inserted.Load() < n+500 && !stop.Load(); {
			time.Sleep(time.Millisecond)
		}
	}
	stop.Store(true)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("%d rows inserted across 5 switches each way; %d inserts ran into a drop of the C functions", inserted.Load(), dropped.Load())
	if d := dropped.Load(); d > 5*4 {
		t.Errorf("%d inserts failed at the drops of the C functions; want at most one a session a switch back (20)", d)
	}
	if n := queryInt(t, conn, "SELECT count(*) - count(DISTINCT id) FROM t"); n != 0 {
		t.Fatalf("%d repeated IDs", n)
	}
}

// TestNativeWrapperInlined: the planner inlines the wrapper
// snowflake_next_id(), whatever the caller's search_path, so that a
// column default calls the C function directly, at its cost alone (a
// wrapper called through fmgr_sql would cost several times the C call):
// EXPLAIN VERBOSE of an INSERT with the default, and of a statement of
// many calls, shows snowflake_next_id_c(0) and not snowflake_next_id().
func TestNativeWrapperInlined(t *testing.T) {
	so := library(t, tw)
	conn := connect(t, pgtest.DSN(t))
	installNative(t, conn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 2}, so, false)
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT public.snowflake_next_id(), c int)")
	for _, path := range []string{"public", "pg_catalog", "pg_temp, public"} {
		mustExec(t, conn, "SET search_path = "+path)
		for _, q := range []string{"INSERT INTO public.t (c) VALUES (1)", "SELECT count(public.snowflake_next_id()) FROM generate_series(1, 1000000)"} {
			rows, _ := conn.Query(context.Background(), "EXPLAIN VERBOSE "+q)
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			if !strings.Contains(text, "snowflake_next_id_c(0)") || strings.Contains(text, "snowflake_next_id()") {
				t.Errorf("search_path %s: EXPLAIN VERBOSE %s:\n%s\nwant snowflake_next_id_c(0) inlined", path, q, text)
			}
		}
	}
}
