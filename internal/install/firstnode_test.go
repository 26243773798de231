package install

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
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
	upHook = func(context.Context, *sql.DB, fs.FS, string) (*Result, error) { return nil, failed }
	defer func() { upHook = up }()
	if _, err := Apply(ctx, db, sqlgen.Options{UnsetNode: true}); !errors.Is(err, failed) {
		t.Fatalf("Apply = %v; want the release line's error", err)
	}
	var left string
	if err := db.QueryRow(`SELECT COALESCE(pg_catalog.string_agg(p.proname, ', '), '') FROM pg_catalog.pg_proc p
		WHERE p.pronamespace = 'public'::pg_catalog.regnamespace AND p.proname LIKE 'snowflake%'`).Scan(&left); err != nil || left != "" {
		t.Fatalf("after the failed first install, public holds %q (%v); want nothing", left, err)
	}
	upHook = up
	res, err := Apply(ctx, db, sqlgen.Options{UnsetNode: true})
	if err != nil || res.Version != sqlgen.Latest {
		t.Fatalf("Apply again: %+v, %v; want the latest release", res, err)
	}
}
