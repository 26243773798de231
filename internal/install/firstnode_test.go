package install

import (
	"context"
	"database/sql"
	"errors"
	snowflake "github.com/sfgen/sfgen"
	"io/fs"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// TestFirstNodeUndone: when the release line fails on a first install
// without a node, after the node (unset) was made for it, Apply leaves
// the schema as it was: no snowflake_node_bits() alone, which would make
// every later install refuse the schema (objects under sfgen's names but
// no install).
func TestFirstNodeUndone(t *testing.T) {
	db, err := sql.Open("pgx", pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	failed := errors.New("the release line failed")
	upHook = func(context.Context, *sql.DB, fs.FS, catalog.Schema) (*Result, error) { return nil, failed }
	defer func() { upHook = up }()
	if _, err := Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}); !errors.Is(err, failed) {
		t.Fatalf("Apply = %v; want the release line's error", err)
	}
	var left string
	if err := db.QueryRow(`SELECT COALESCE(pg_catalog.string_agg(p.proname, ', '), '') FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = 'public'::pg_catalog.regnamespace AND p.proname LIKE 'snowflake%'`).Scan(&left); err != nil || left != "" {
		t.Fatalf("after the failed first install, public holds %q (%v); want nothing", left, err)
	}
	upHook = up
	res, err := Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true})
	if err != nil || res.Version != sqlgen.Latest {
		t.Fatalf("Apply again: %+v, %v; want the latest release", res, err)
	}
}

// TestFirstNodeCutShort: a first install cut short after it gave the
// schema its node and before the release line (a crash) leaves only
// snowflake_node_bits(); the next install carries on from it, keeping
// that node, instead of refusing the schema for ever.
func TestFirstNodeCutShort(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings string
		want     string // snowflake_node() after the install, or the error's SQLSTATE
	}{
		{"unset", "", "SF201"},
		{"from settings", "SET LOCAL sfgen.datacenter = '4'; SET LOCAL sfgen.machine = '5';", "(4,5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sql.Open("pgx", pgtest.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			script, err := sqlgen.FirstNode(sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true})
			if err != nil {
				t.Fatal(err)
			}
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(tc.settings + string(script)); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			res, err := Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true})
			if err != nil || res.Version != sqlgen.Latest {
				t.Fatalf("Apply over the node a cut-short install left: %+v, %v; want the latest release", res, err)
			}
			var got string
			if err := db.QueryRow(`SELECT public.snowflake_node()::pg_catalog.text`).Scan(&got); err != nil {
				var state interface{ SQLState() string }
				if errors.As(err, &state) {
					got = state.SQLState()
				}
			}
			if got != tc.want {
				t.Errorf("node after the install: %q; want %q", got, tc.want)
			}
		})
	}
}

// TestReleaseThreeNamesOfTheInstaller: over a schema at release 2, a
// table or function of the installing role's own under one of the names
// release 3 adds is refused (SF101), not taken over: before, the upgrade
// revoked the table's grants and the lease functions then failed on it.
func TestReleaseThreeNamesOfTheInstaller(t *testing.T) {
	for _, own := range []string{
		"CREATE TABLE public.snowflake_lease (id bigint)",
		"CREATE FUNCTION public.snowflake_lease_take(pg_catalog.text, bigint) RETURNS integer LANGUAGE sql AS 'SELECT 1'",
	} {
		t.Run(own[:strings.Index(own, "(")], func(t *testing.T) {
			db, err := sql.Open("pgx", pgtest.DSN(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			files, err := released.Migrations(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files[:2] {
				if _, err := db.Exec(f.Up()); err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
			}
			if _, err := db.Exec(own); err != nil {
				t.Fatal(err)
			}
			_, err = Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
			if !errors.Is(err, ErrForeignObject) {
				t.Fatalf("Apply over release 2 with %q: %v; want ErrForeignObject", own, err)
			}
			in, err := catalog.Inspect(ctx, catalog.DB(db), catalog.Public)
			if err != nil || in.Release != 2 {
				t.Errorf("after the refusal: release %d, %v; want 2, unchanged", in.Release, err)
			}
		})
	}
}
