package catalog_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlcheck"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// open returns a pgx connection and a database/sql handle to a fresh
// database.
func open(t *testing.T) (*pgx.Conn, *sql.DB) {
	t.Helper()
	return openDSN(t, pgtest.DSN(t))
}

// openDSN is open for the database dsn.
func openDSN(t *testing.T, dsn string) (*pgx.Conn, *sql.DB) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return conn, db
}

func schema(t *testing.T, name string) catalog.Schema {
	t.Helper()
	s, err := catalog.ParseSchema(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// inspectBoth inspects s through pgx and through database/sql (DB), and
// fails t when the two answers differ.
func inspectBoth(t *testing.T, conn *pgx.Conn, db *sql.DB, s catalog.Schema) (catalog.Installed, error) {
	t.Helper()
	in, err := catalog.Inspect(t.Context(), catalog.PGX(conn), s)
	in2, err2 := catalog.Inspect(t.Context(), catalog.DB(db), s)
	if fmt.Sprint(err) != fmt.Sprint(err2) || !reflect.DeepEqual(in, in2) {
		t.Errorf("schema %s: through pgx %+v, %v; through database/sql %+v, %v", s, in, err, in2, err2)
	}
	return in, err
}

// TestInspect: Inspect reads the layout, release, node and functions of
// each release's install, for presets and a custom layout, with a node
// and without; the zero Layout, release 0 and no node function where sfgen
// is not installed; and an error naming the text where snowflake_layout()
// returns no layout this sfgen reads.
func TestInspect(t *testing.T) {
	custom, err := snowflake.ParseLayout("epoch=1600000000000 timestamp=41 datacenter=4 machine=6 sequence=12")
	if err != nil {
		t.Fatal(err)
	}
	conn, db := open(t)
	script := func(release int, o sqlgen.Options) func(string) error {
		return func(s string) error {
			o.Schema = s
			b, err := released.Script(o, release)
			if err != nil {
				return err
			}
			_, err = db.Exec(string(b))
			return err
		}
	}
	every := []string{catalog.FuncLayout, catalog.FuncRelease, catalog.FuncNode, catalog.FuncNextID, catalog.FuncCompose,
		catalog.FuncDecompose, catalog.FuncTimestamp, catalog.FuncFirstID, catalog.FuncLastID, catalog.FuncLeaseTake}
	for _, tc := range []struct {
		name    string
		install func(schema string) error
		release int
		layout  snowflake.Layout
		node    catalog.Node
		missing []string
		err     string
	}{
		{"none", func(string) error { return nil }, 0, snowflake.Layout{}, catalog.Node{}, every, ""},
		{"empty schema", func(s string) error { _, err := db.Exec("CREATE SCHEMA " + s); return err }, 0, snowflake.Layout{}, catalog.Node{}, every, ""},
		{"release 1, discord", script(1, sqlgen.Options{Layout: snowflake.Discord(), Datacenter: 3, Machine: 7}),
			1, snowflake.Discord(), catalog.Node{State: catalog.NodeSet, Datacenter: 3, Machine: 7}, []string{catalog.FuncRelease, catalog.FuncLeaseTake}, ""},
		{"release 2, custom", script(2, sqlgen.Options{Layout: custom, Datacenter: 15, Machine: 63}),
			2, custom, catalog.Node{State: catalog.NodeSet, Datacenter: 15, Machine: 63}, []string{catalog.FuncLeaseTake}, ""},
		{"latest, twitter", script(sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 2}),
			sqlgen.Latest, snowflake.Twitter(), catalog.Node{State: catalog.NodeSet, Datacenter: 1, Machine: 2}, nil, ""},
		{"latest, no node", script(sqlgen.Latest, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}),
			sqlgen.Latest, snowflake.Twitter(), catalog.Node{State: catalog.NodeUnset}, nil, ""},
		{"unreadable layout", func(s string) error {
			_, err := db.Exec("CREATE SCHEMA " + s + "; CREATE FUNCTION " + s + ".snowflake_layout() RETURNS text LANGUAGE sql AS $$SELECT 'epoch=1 timestamp=41'$$")
			return err
		}, 0, snowflake.Layout{}, catalog.Node{}, nil, `snowflake_layout() returns "epoch=1 timestamp=41", not a layout this sfgen reads: invalid layout "epoch=1 timestamp=41": datacenter: missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "s_" + strings.NewReplacer(" ", "_", ",", "").Replace(tc.name)
			t.Cleanup(func() { db.Exec("DROP SCHEMA IF EXISTS " + name + " CASCADE") })
			if err := tc.install(name); err != nil {
				t.Fatalf("install: %v", err)
			}
			in, err := inspectBoth(t, conn, db, schema(t, name))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, snowflake.ErrInvalidLayout) {
					t.Errorf("Inspect = %+v, %v; want an error with %q", in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in.Release != tc.release || in.Layout != tc.layout || in.Node != tc.node || in.Schema.Name() != name ||
				len(in.Stale) != 0 || in.NativeLibrary != "" {
				t.Errorf("Inspect = release %d, layout %v, %v, schema %s, stale %v, library %q; want release %d, layout %v, %v, schema %s, nothing stale, the SQL generator",
					in.Release, in.Layout, in.Node, in.Schema, in.Stale, in.NativeLibrary, tc.release, tc.layout, tc.node, name)
			}
			if got := in.Missing(every...); !slices.Equal(got, tc.missing) {
				t.Errorf("Missing = %v; want %v", got, tc.missing)
			}
			for _, f := range every {
				if in.Has(f) == slices.Contains(tc.missing, f) {
					t.Errorf("Has(%s) = %v, but Missing says %v", f, in.Has(f), tc.missing)
				}
			}
		})
	}
}

// TestInspectStale: Inspect lists the functions an older release's plain
// script put back over a later release (their comments lack the later
// release's marker), and Effective counts such a mix as release 1, as the
// preflight does; an install as it was made lists none.
func TestInspectStale(t *testing.T) {
	conn, db := open(t)
	node := map[string]int64{}
	run := func(s string, r int) {
		t.Helper()
		if _, ok := node[s]; !ok {
			node[s] = int64(len(node)) // a node each: one maker a node
		}
		script, err := released.Script(sqlgen.Options{Schema: s, Layout: snowflake.Twitter(), Machine: node[s]}, r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(script)); err != nil {
			t.Fatalf("release %d's script on schema %s: %v", r, s, err)
		}
	}
	for r := 2; r <= sqlgen.Latest; r++ {
		name := fmt.Sprintf("stale_%d", r)
		s := schema(t, name)
		t.Cleanup(func() { db.Exec("DROP SCHEMA IF EXISTS " + name + " CASCADE") })
		run(name, r)
		in, err := inspectBoth(t, conn, db, s)
		if err != nil || in.Release != r || len(in.Stale) != 0 || in.Effective() != r {
			t.Errorf("release %d: Inspect = %+v (effective %d), %v; want release %d, nothing stale", r, in, in.Effective(), err, r)
		}
		// Release 1's script checks nothing and replaces what it defines.
		run(name, 1)
		in, err = inspectBoth(t, conn, db, s)
		if err != nil || in.Release != r || len(in.Stale) == 0 || in.Effective() != 1 {
			t.Errorf("release 1's script over release %d: Inspect = %+v (effective %d), %v; want release %d, stale, effective 1", r, in, in.Effective(), err, r)
		}
		for _, f := range in.Stale {
			fn, _, _ := strings.Cut(strings.TrimPrefix(f, name+"."), "(")
			if strings.HasPrefix(fn, "snowflake_lease_") {
				t.Errorf("release 1's script over release %d: %s listed stale; release 1 has no such function", r, f)
			}
		}
		for _, f := range []string{"snowflake_next_id()", "snowflake_compose(bigint,integer,integer,integer)"} {
			if !slices.Contains(in.Stale, name+"."+f) {
				t.Errorf("release 1's script over release %d: stale %v lacks %s", r, in.Stale, f)
			}
		}
		// The latest release's script puts the release back whole.
		run(name, sqlgen.Latest)
		in, err = inspectBoth(t, conn, db, s)
		if err != nil || in.Release != sqlgen.Latest || len(in.Stale) != 0 {
			t.Errorf("the latest script after release 1's over release %d: Inspect = %+v, %v; want release %d, nothing stale", r, in, err, sqlgen.Latest)
		}
	}
}

// TestInspectKeepsTheTransaction: Inspect of a schema with no node set
// calls nothing that raises, so a transaction that inspects it goes on.
func TestInspectKeepsTheTransaction(t *testing.T) {
	conn, _ := open(t)
	ctx := t.Context()
	b, err := sqlgen.Script(sqlgen.Options{Schema: "nonode", Layout: snowflake.Twitter(), UnsetNode: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(b)); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	in, err := catalog.Inspect(ctx, catalog.PGX(tx), schema(t, "nonode"))
	if err != nil || in.Node.State != catalog.NodeUnset {
		t.Fatalf("Inspect = %+v, %v; want no node", in, err)
	}
	var one int
	if err := tx.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Errorf("the transaction after Inspect: %v", err)
	}
}

// TestStatementsQualified: every operator, function and type in Inspect's
// statements is bound to pg_catalog or to the schema inspected.
func TestStatementsQualified(t *testing.T) {
	sqlcheck.SkipUnsupported(t)
	qs, err := catalog.Statements()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if f := sqlcheck.Check([]byte(q), sqlcheck.Options{OwnSchemas: []string{catalog.Public.Quoted()}}); len(f) > 0 {
			t.Errorf("%s\nfindings: %v", q, f)
		}
	}
}

// TestInspectWhileAnInstallCommits: an install that drops one of sfgen's
// functions and makes it again, committing while Inspect's statement
// runs, does not make that function look like another role's (CI's
// concurrent first installs hit it by chance: "function 16387 owned by
// postgres ... which sfgen did not create"). A repeatable-read
// transaction holds a snapshot from before the commit, as a statement
// running across it does: a first read there finds the catalog changed,
// and Inspect reads again (here outside that snapshot); a transaction
// that keeps it gets ErrCatalogChanged, never a wrong answer.
func TestInspectWhileAnInstallCommits(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn, _ := openDSN(t, dsn)
	ctx := t.Context()
	b, err := sqlgen.Script(sqlgen.Options{Schema: "again", Layout: snowflake.Twitter(), Datacenter: 1, Machine: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(b)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"snowflake_release", "snowflake_next_id_local"} {
		t.Run(name, func(t *testing.T) {
			old, _ := openDSN(t, dsn)
			tx, err := old.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, "SELECT 1"); err != nil { // takes the snapshot
				t.Fatal(err)
			}
			fn := "again." + name + "()"
			var def, comment string
			if err := conn.QueryRow(ctx, "SELECT pg_get_functiondef($1::regprocedure), format('COMMENT ON FUNCTION %s IS %L', $1, obj_description($1::regprocedure, 'pg_proc'))", fn).Scan(&def, &comment); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, "BEGIN; DROP FUNCTION "+fn+"; "+def+"; "+comment+"; COMMIT"); err != nil {
				t.Fatal(err)
			}

			in, err := catalog.Inspect(ctx, catalog.PGX(tx), schema(t, "again"))
			if !errors.Is(err, catalog.ErrCatalogChanged) {
				t.Errorf("Inspect in a snapshot from before the commit = %+v, %v; want ErrCatalogChanged", in, err)
			}
			first := &firstFrom{first: catalog.PGX(tx), then: catalog.PGX(conn)}
			in, err = catalog.Inspect(ctx, first, schema(t, "again"))
			if err != nil || len(in.Foreign) > 0 || len(in.Stale) > 0 || in.Node.Machine != 2 || in.Release != catalog.Latest {
				t.Fatalf("Inspect read first in that snapshot = %+v, %v; want node 1/2, release %d, nothing foreign or stale", in, err, catalog.Latest)
			}
			if first.calls < 3 {
				t.Errorf("Inspect ran %d statements; want the first read again", first.calls)
			}
		})
	}
}

// firstFrom runs its first statement through first, the others through
// then.
type firstFrom struct {
	first, then catalog.Querier
	calls       int
}

func (f *firstFrom) QueryRow(ctx context.Context, query string, args ...any) catalog.Row {
	f.calls++
	if f.calls == 1 {
		return f.first.QueryRow(ctx, query, args...)
	}
	return f.then.QueryRow(ctx, query, args...)
}
