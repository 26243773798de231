package sfgenpg_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
	"github.com/sfgen/sfgen/sfgenpg"
)

// openDB is a database/sql handle over pgx on dsn, closed when t ends.
func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// execAll runs statements on db, failing t at the first error.
func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// wantSchemaError checks that err wraps sentinel and is a *SchemaError
// about schema, whose message ends with its fix.
func wantSchemaError(t *testing.T, what string, err, sentinel error, schema string) *sfgenpg.SchemaError {
	t.Helper()
	var se *sfgenpg.SchemaError
	if !errors.Is(err, sentinel) || !errors.As(err, &se) {
		t.Fatalf("%s: %v; want a *SchemaError wrapping %v", what, err, sentinel)
	}
	if se.Schema != schema || se.Fix == "" || !strings.HasSuffix(err.Error(), se.Fix) || !strings.Contains(err.Error(), "schema "+schema) {
		t.Errorf("%s: %+v (%q); want schema %s named and the fix at the end", what, se, err, schema)
	}
	return se
}

// TestInstallAndCheck: Install into schema ids with Discord's layout and
// node 1/2 makes IDs of that node and layout (read with the layout's Go
// decomposer); Check is nil there, ErrLayoutMismatch for Twitter's, and
// ErrNotInstalled in a schema without sfgen. Install again applies
// nothing, and refuses another node (the schema keeps its own).
func TestInstallAndCheck(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, pgtest.DSN(t))
	before := time.Now().Add(-time.Second)
	o := sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Discord(), Node: &sfgenpg.Node{Datacenter: 1, Machine: 2}}
	if err := sfgenpg.Check(ctx, db, o); !errors.Is(err, sfgenpg.ErrNotInstalled) {
		t.Fatalf("Check on an empty database: %v; want ErrNotInstalled", err)
	} else if se := wantSchemaError(t, "not installed", err, sfgenpg.ErrNotInstalled, "ids"); se.Release != 0 || !se.Layout.IsZero() || se.Node != nil || se.Want != sfgen.Discord() ||
		!strings.Contains(se.Fix, "sfgen install --schema ids --layout discord") {
		t.Errorf("not installed: %+v", se)
	}
	res, err := sfgenpg.Install(ctx, db, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Schema != "ids" || res.Release != sfgenpg.Release || len(res.Applied) != 1 || res.Layout != sfgen.Discord() || res.Node == nil || *res.Node != *o.Node {
		t.Errorf("Install = %+v; want every release applied to ids, Discord's layout, node 1/2", res)
	}
	var ids []sfgen.ID
	for range 3 {
		var id sfgen.ID
		if err := db.QueryRowContext(ctx, "SELECT ids.snowflake_next_id()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, id := range ids {
		p, err := sfgen.Discord().Decompose(id)
		if err != nil || p.Datacenter != 1 || p.Machine != 2 || p.Time().Before(before) || p.Time().After(time.Now().Add(time.Second)) || (i > 0 && id <= ids[i-1]) {
			t.Errorf("ID %d from ids.snowflake_next_id(): %+v, %v; want node 1/2 in Discord's layout, dated now, increasing", id, p, err)
		}
	}
	if err := sfgenpg.Check(ctx, db, o); err != nil {
		t.Errorf("Check after Install: %v", err)
	}
	tw := o
	tw.Layout = sfgen.Twitter()
	if se := wantSchemaError(t, "Twitter's layout", sfgenpg.Check(ctx, db, tw), sfgenpg.ErrLayoutMismatch, "ids"); se.Layout != sfgen.Discord() || se.Want != sfgen.Twitter() ||
		se.Release != sfgenpg.Release || se.Node == nil || *se.Node != *o.Node {
		t.Errorf("layout mismatch: %+v", se)
	}
	if _, err := sfgenpg.Install(ctx, db, tw); !errors.Is(err, sfgenpg.ErrLayoutMismatch) {
		t.Errorf("Install of Twitter's layout over Discord's: %v; want ErrLayoutMismatch", err)
	}
	if res, err := sfgenpg.Install(ctx, db, o); err != nil || len(res.Applied) != 0 || res.Release != sfgenpg.Release {
		t.Errorf("Install again = %+v, %v; want nothing applied", res, err)
	}
	other := o
	other.Node = &sfgenpg.Node{Datacenter: 3, Machine: 3}
	if _, err := sfgenpg.Install(ctx, db, other); err == nil || !strings.Contains(err.Error(), "sfgen node --schema ids --datacenter 3 --machine 3") {
		t.Errorf("Install with another node: %v; want the refusal naming sfgen node", err)
	}
	// A configured node that changed is noticed at startup: Check names
	// both nodes and the command that moves it. Without a node asked
	// for, Check takes the schema's.
	if se := wantSchemaError(t, "another node", sfgenpg.Check(ctx, db, other), sfgenpg.ErrNodeMismatch, "ids"); se.Node == nil || *se.Node != *o.Node ||
		!strings.Contains(se.Error(), "has node datacenter 1, machine 2, not datacenter 3, machine 3") || !strings.Contains(se.Error(), "sfgen node --schema ids --datacenter 3 --machine 3") {
		t.Errorf("Check with another node: %v; want ErrNodeMismatch naming both nodes and sfgen node", se)
	}
	if err := sfgenpg.Check(ctx, db, sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Discord()}); err != nil {
		t.Errorf("Check without a node: %v", err)
	}
	if _, err := sfgenpg.Install(ctx, db, sfgenpg.InstallOptions{Schema: "ids"}); !errors.Is(err, sfgen.ErrZeroLayout) {
		t.Errorf("Install of the zero layout: %v; want ErrZeroLayout", err)
	}
	if err := sfgenpg.Check(ctx, db, sfgenpg.InstallOptions{Schema: "ids"}); !errors.Is(err, sfgen.ErrZeroLayout) {
		t.Errorf("Check of the zero layout: %v; want ErrZeroLayout", err)
	}
}

// TestCheckOlderRelease: a schema at release 1 is ErrOlderRelease, with
// its release and node; Install upgrades it, keeping the node, and Check
// is then nil.
func TestCheckOlderRelease(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, pgtest.DSN(t))
	script, err := released.Script(sqlgen.Options{Schema: "ids", Layout: sfgen.Discord(), Datacenter: 1, Machine: 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	execAll(t, db, string(script))
	o := sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Discord()}
	if se := wantSchemaError(t, "release 1", sfgenpg.Check(ctx, db, o), sfgenpg.ErrOlderRelease, "ids"); se.Release != 1 || se.Node == nil || *se.Node != (sfgenpg.Node{Datacenter: 1, Machine: 2}) ||
		!strings.Contains(se.Fix, "sfgen install --schema ids --layout discord") {
		t.Errorf("release 1: %+v", se)
	}
	res, err := sfgenpg.Install(ctx, db, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Release != sfgenpg.Release || len(res.Applied) != 1 || res.Node == nil || *res.Node != (sfgenpg.Node{Datacenter: 1, Machine: 2}) {
		t.Errorf("Install over release 1 = %+v; want the upgrades applied, node 1/2 kept", res)
	}
	if err := sfgenpg.Check(ctx, db, o); err != nil {
		t.Errorf("Check after the upgrade: %v", err)
	}
}

// TestCheckRefusals: each of Check's other answers, provoked: no node
// (and DBError of the INSERT that fails for it), a newer release, objects
// under sfgen's names that sfgen did not make, and a schema other roles
// can create in; Install refuses the last three, changing nothing.
func TestCheckRefusals(t *testing.T) {
	ctx := context.Background()
	o := sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Twitter()}
	fresh := func(t *testing.T, node *sfgenpg.Node) *sql.DB {
		db := openDB(t, pgtest.DSN(t))
		o := o
		o.Node = node
		if _, err := sfgenpg.Install(ctx, db, o); err != nil {
			t.Fatal(err)
		}
		return db
	}
	t.Run("no node", func(t *testing.T) {
		db := fresh(t, nil)
		if se := wantSchemaError(t, "no node", sfgenpg.Check(ctx, db, o), sfgenpg.ErrNoNode, "ids"); se.Node != nil || se.Release != sfgenpg.Release ||
			!strings.Contains(se.Fix, "sfgen node --schema ids --datacenter N --machine N") {
			t.Errorf("no node: %+v", se)
		}
		execAll(t, db, "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), item text)")
		_, err := db.ExecContext(ctx, "INSERT INTO orders (item) VALUES ('tea')")
		if err == nil || errors.Is(err, sfgenpg.ErrNoNode) || !errors.Is(sfgenpg.DBError(err), sfgenpg.ErrNoNode) || sfgenpg.DBError(err).Error() != err.Error() {
			t.Errorf("INSERT without a node: %v; want an error DBError makes ErrNoNode, its message kept", err)
		}
	})
	t.Run("newer release", func(t *testing.T) {
		db := fresh(t, &sfgenpg.Node{Datacenter: 1, Machine: 1})
		execAll(t, db, "CREATE OR REPLACE FUNCTION ids.snowflake_release() RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 99'")
		if se := wantSchemaError(t, "release 99", sfgenpg.Check(ctx, db, o), sfgenpg.ErrNewerRelease, "ids"); se.Release != 99 {
			t.Errorf("release 99: %+v", se)
		}
		if _, err := sfgenpg.Install(ctx, db, o); !errors.Is(err, sfgenpg.ErrNewerRelease) {
			t.Errorf("Install over release 99: %v; want ErrNewerRelease", err)
		}
	})
	for _, tc := range []struct {
		name, sql string
		want      error
	}{
		{"foreign object", "CREATE FUNCTION ids.snowflake_node(integer) RETURNS integer LANGUAGE sql AS 'SELECT 1'", sfgenpg.ErrForeignObject},
		{"untrusted schema", "GRANT CREATE ON SCHEMA ids TO PUBLIC", sfgenpg.ErrUntrustedSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := fresh(t, &sfgenpg.Node{Datacenter: 1, Machine: 1})
			execAll(t, db, tc.sql)
			if err := sfgenpg.Check(ctx, db, o); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "schema ids is not trusted") {
				t.Errorf("Check: %v; want %v", err, tc.want)
			}
			if _, err := sfgenpg.Install(ctx, db, o); !errors.Is(err, tc.want) {
				t.Errorf("Install: %v; want %v", err, tc.want)
			}
		})
	}
}

// TestDBError: DBError finds the sentinel of each SQLSTATE sfgen's SQL
// raises, from real database errors (a RAISE of that SQLSTATE, and the
// composer's own range error); PostgreSQL's own 22003 and any other error
// come back as they are, nil as nil.
func TestDBError(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, pgtest.DSN(t))
	if _, err := sfgenpg.Install(ctx, db, sfgenpg.InstallOptions{Layout: sfgen.Twitter(), Node: &sfgenpg.Node{Datacenter: 1, Machine: 1}}); err != nil {
		t.Fatal(err)
	}
	raise := func(code string) string {
		return "DO $$BEGIN RAISE EXCEPTION USING ERRCODE = '" + code + "', MESSAGE = 'raised'; END$$"
	}
	for _, tc := range []struct {
		sql  string
		want error // nil: returned as it is
	}{
		{raise("SF201"), sfgenpg.ErrNoNode},
		{raise("SF202"), sfgenpg.ErrNoFreeNode},
		{raise("SF101"), sfgenpg.ErrForeignObject},
		{raise("SF102"), sfgenpg.ErrLayoutMismatch},
		{raise("SF103"), sfgenpg.ErrNewerRelease},
		{raise("SF104"), sfgenpg.ErrUntrustedSchema},
		{raise("SF105"), sfgenpg.ErrUntrustedSchema},
		{"SELECT public.snowflake_compose(1288834975657, 32, 1, 0)", sfgen.ErrOutOfRange},
		{"SELECT 2147483647::integer + 1", nil},
		{raise("SF106"), nil},
		{"SELECT * FROM no_such_table", nil},
	} {
		_, err := db.ExecContext(ctx, tc.sql)
		if err == nil {
			t.Fatalf("%s: no error", tc.sql)
		}
		got := sfgenpg.DBError(err)
		if got.Error() != err.Error() {
			t.Errorf("%s: DBError's message %q; want %q", tc.sql, got, err)
		}
		if tc.want == nil {
			if got != err {
				t.Errorf("%s: DBError(%v) = %v; want it as it is", tc.sql, err, got)
			}
			continue
		}
		if !errors.Is(got, tc.want) {
			t.Errorf("%s: DBError(%v) does not match %v", tc.sql, err, tc.want)
		}
	}
	if sfgenpg.DBError(nil) != nil {
		t.Error("DBError(nil) is not nil")
	}
	plain := errors.New("plain")
	if sfgenpg.DBError(plain) != plain {
		t.Error("DBError of an error without a SQLSTATE changed it")
	}
}

// TestPgxpoolRoute: an application on a pgxpool.Pool reaches Install,
// Check and TakeLease through stdlib.OpenDBFromPool.
func TestPgxpoolRoute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	o := sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Discord(), Node: &sfgenpg.Node{Datacenter: 4, Machine: 5}}
	res, err := sfgenpg.Install(ctx, db, o)
	if err != nil || res.Release != sfgenpg.Release || res.Node == nil || *res.Node != *o.Node {
		t.Fatalf("Install through a pool = %+v, %v", res, err)
	}
	if err := sfgenpg.Check(ctx, db, o); err != nil {
		t.Errorf("Check through a pool: %v", err)
	}
	lease, err := sfgenpg.TakeLease(ctx, db, sfgenpg.LeaseOptions{Schema: "ids", Holder: "pool", TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close(ctx)
	id, err := lease.Next()
	p, _ := sfgen.Discord().Decompose(id)
	if err != nil || lease.Layout() != sfgen.Discord() || p.Datacenter != lease.Datacenter() || p.Machine != lease.Machine() || (p.Datacenter == 4 && p.Machine == 5) {
		t.Errorf("a lease through a pool: ID %d (%+v), %v; want one of the lease's node, not the schema's 4/5", id, p, err)
	}
	// The pool's sessions keep their search_path.
	var path string
	if err := pool.QueryRow(ctx, "SHOW search_path").Scan(&path); err != nil || strings.Contains(path, "pg_catalog") {
		t.Errorf("search_path of a pooled session after Install: %q, %v", path, err)
	}
}

// TestInstallGrants: InstallOptions.Grants gives ID-making to a role,
// whose insert through the default then works (it fails before); a role
// that does not exist is an error and installs nothing.
func TestInstallGrants(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	db := openDB(t, dsn)
	app, appDSN := pgtest.LoginRole(t, dsn, "grants_app", "")
	o := sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Twitter(), Node: &sfgenpg.Node{Datacenter: 1, Machine: 1}}
	bad := o
	bad.Grants = []string{"no_such_role_here"}
	if _, err := sfgenpg.Install(ctx, db, bad); err == nil || !strings.Contains(err.Error(), "no_such_role_here") {
		t.Fatalf("Install granting a role that does not exist: %v; want an error naming it", err)
	}
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = 'ids')").Scan(&exists); err != nil || exists {
		t.Fatalf("a refused Install left schema ids: %v %v", exists, err)
	}
	if _, err := sfgenpg.Install(ctx, db, o); err != nil {
		t.Fatal(err)
	}
	execAll(t, db, "CREATE TABLE public.g (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), v int)", "GRANT INSERT ON public.g TO "+app)
	appDB := openDB(t, appDSN)
	if _, err := appDB.ExecContext(ctx, "INSERT INTO public.g (v) VALUES (1)"); err == nil {
		t.Fatalf("%s inserted through the default without ID-making", app)
	}
	o.Grants = []string{app}
	if _, err := sfgenpg.Install(ctx, db, o); err != nil {
		t.Fatal(err)
	}
	if _, err := appDB.ExecContext(ctx, "INSERT INTO public.g (v) VALUES (2)"); err != nil {
		t.Fatalf("%s inserts after Install with Grants: %v", app, err)
	}
}
