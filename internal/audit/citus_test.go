package audit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/audit"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/pgcluster/citustest"
)

// TestAuditCitus audits a table distributed over two Citus workers,
// through the coordinator: the report counts each node's rows as they
// were made (the IDs composed here, three nodes, the README's formula),
// and Citus aggregates on the workers, so that the coordinator receives
// a few rows a shard, not the table's rows; the same statement with its
// subqueries kept apart (OFFSET 0, as on a plain table) pulls every row,
// which is what the test would see if Run missed the distribution.
func TestAuditCitus(t *testing.T) {
	cl := citustest.Start(t, 2)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, cl.Coordinator.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		"CREATE TABLE events (id bigint, tenant integer, at timestamptz, PRIMARY KEY (tenant, id))",
		"SELECT pg_catalog.create_distributed_table('events', 'tenant')",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// 30,000 rows from three nodes, 10,000 each (1/1, 1/2 and 1/3),
	// dated a minute ago, 4 ms apart, stored with that time.
	start := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	want := map[[2]int64]int64{}
	var ids []int64
	var tenants []int32
	var ats []time.Time
	for i := range 30000 {
		m := int64(1 + i%3)
		at := start.Add(time.Duration(i/3) * 4 * time.Millisecond)
		id, err := snowflake.Twitter().Compose(at.UnixMilli(), 1, m, int64(i%4096))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, int64(id))
		tenants = append(tenants, int32(i%16))
		ats = append(ats, at)
		want[[2]int64{1, m}]++
	}
	if _, err := conn.Exec(ctx, "INSERT INTO events SELECT * FROM unnest($1::bigint[], $2::integer[], $3::timestamptz[])", ids, tenants, ats); err != nil {
		t.Fatal(err)
	}

	db, err := connect.OpenDB(ctx, cl.Coordinator.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, timeColumn := range []string{"", "at"} {
		o := audit.Options{Table: "events", TimeColumn: timeColumn, Layout: snowflake.Twitter(), FutureTolerance: audit.DefaultFutureTolerance}
		r, err := audit.Run(ctx, db, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rows != 30000 || len(r.Nodes) != 3 || !r.Clean() || !r.Distributed {
			t.Fatalf("time column %q: %d rows, %d nodes, clean %v, distributed %v; want 30000 rows, 3 nodes, clean, distributed", timeColumn, r.Rows, len(r.Nodes), r.Clean(), r.Distributed)
		}
		for _, n := range r.Nodes {
			if n.Rows != want[[2]int64{n.Datacenter, n.Machine}] {
				t.Errorf("time column %q: node %d/%d has %d rows; want %d", timeColumn, n.Datacenter, n.Machine, n.Rows, want[[2]int64{n.Datacenter, n.Machine}])
			}
		}
		if timeColumn != "" && (r.Skew == nil || r.Skew.MaxAbsMs != 0) {
			t.Errorf("skew %+v; want 0 throughout (each ID dated as its row)", r.Skew)
		}

		// What the coordinator receives from the workers: the most rows
		// any Citus scan in the plan returned.
		received := func(distributed bool) float64 {
			o := o
			o.Distributed = distributed
			var plan []map[string]any
			var out string
			if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+audit.Query(o), int64(60000)).Scan(&out); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(out), &plan); err != nil {
				t.Fatal(err)
			}
			return mostCitusRows(plan[0]["Plan"].(map[string]any))
		}
		if got := received(true); got > 3*64 {
			t.Errorf("time column %q: a Citus scan returned %v rows to the coordinator; want at most a few a shard (aggregated on the workers)", timeColumn, got)
		}
		if got := received(false); got < 30000 {
			t.Errorf("time column %q: with OFFSET 0 a Citus scan returned %v rows; want every row (else this test cannot tell the two apart)", timeColumn, got)
		}
	}
}

// mostCitusRows returns the largest "Actual Rows" of a Citus custom scan
// in the plan node and the nodes under it (subplans included).
func mostCitusRows(n map[string]any) float64 {
	most := 0.0
	if n["Custom Plan Provider"] == "Citus Adaptive" {
		most, _ = n["Actual Rows"].(float64)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["Custom Plan Provider"] == "Citus Adaptive" {
				if r, _ := v["Actual Rows"].(float64); r > most {
					most = r
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(n)
	return most
}
