package verify

import (
	"context"
	"database/sql"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestGeneratorCheckNoNode: a schema installed without a node makes no
// IDs; the generator check says so and fails, and passes once the node
// is set.
func TestGeneratorCheckNoNode(t *testing.T) {
	pool, schema := database(t)
	db, err := sql.Open("pgx", pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := install.Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, UnsetNode: true}); err != nil {
		t.Fatal(err)
	}
	rep, err := CheckGenerator(ctx, pool, schema, snowflake.Twitter(), 2, 100, 5)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.NoNode == "" || rep.IDs != 0 {
		t.Fatalf("no node: %+v; want NoNode and not OK", rep)
	}
	full, err := Run(ctx, pool, Options{Schema: schema, Count: 100, GeneratorIDs: 10})
	if err != nil {
		t.Fatal(err)
	}
	if full.OK() || full.Mismatches != 0 {
		t.Errorf("Run with no node: OK %v, %d mismatches; want not OK, 0 mismatches", full.OK(), full.Mismatches)
	}
	if _, err := pool.Exec(ctx, "SELECT "+schema+".snowflake_set_node(5, 6)"); err != nil {
		t.Fatal(err)
	}
	rep, err = CheckGenerator(ctx, pool, schema, snowflake.Twitter(), 2, 100, 5)
	if err != nil || !rep.OK() || rep.Datacenter != 5 || rep.Machine != 6 || rep.IDs != 200 {
		t.Errorf("node set: %+v, %v; want OK, node 5/6", rep, err)
	}
}
