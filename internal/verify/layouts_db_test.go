package verify

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlcheck"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

var (
	randomLayoutsFlag = flag.Int("random-layouts", 4, "seeded random custom layouts TestLayouts checks besides the presets and the limits")
	layoutFlag        = flag.String("layout", "", "a layout (preset name or spec, e.g. one a failed run printed) TestLayouts checks as well")
)

// dbNowMs is the database's clock in Unix milliseconds.
func dbNowMs(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var ms int64
	if err := pool.QueryRow(context.Background(), "SELECT pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint").Scan(&ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// serverBackends reads the server's bound on the backends that can run
// snowflake_next_id() at once, as the catch-up does.
func serverBackends(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), backendsSQL).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// installLayout renders the plain script for l in schema with the given
// node, fails t if internal/sqlcheck finds a name in it that a caller's
// search_path could redirect, and runs it.
func installLayout(t *testing.T, pool *pgxpool.Pool, l snowflake.Layout, schema string, dc, m int64) {
	t.Helper()
	script, err := sqlgen.Script(sqlgen.Options{Layout: l, Schema: schema, Datacenter: dc, Machine: m})
	if err != nil {
		t.Fatal(err)
	}
	if !sqlcheck.Supported {
		t.Logf("%v: the script is not checked: internal/sqlcheck needs cgo", l)
	} else {
		for _, f := range sqlcheck.Check(script, sqlcheck.Options{OwnSchemas: []string{pgident.Quote(schema), pgident.Quote(catalog.PrivateSchema(schema))}}) {
			t.Errorf("%v: %s", l, f)
		}
	}
	if _, err := pool.Exec(context.Background(), string(script)); err != nil {
		t.Fatalf("install %v: %v", l, err)
	}
}

// runOK runs the differential suite with the generator check on schema
// and fails t unless it passes and drew IDs with the node (dc, m).
func runOK(t *testing.T, pool *pgxpool.Pool, l snowflake.Layout, schema string, seed uint64, dc, m int64) {
	t.Helper()
	rep, err := Run(context.Background(), pool, Options{Layout: l, Schema: schema, Count: 20_000, Seed: seed, GeneratorIDs: 2000})
	if err != nil {
		t.Fatalf("%v: %v", l, err)
	}
	if !rep.OK() || rep.Checked != 20_000 || rep.Valid == 0 || rep.Rejected == 0 || rep.Generator == nil || rep.Generator.IDs != 8000 ||
		rep.Generator.Datacenter != dc || rep.Generator.Machine != m {
		for _, x := range rep.Examples {
			t.Errorf("mismatch: %s", x)
		}
		if rep.Generator != nil {
			for _, x := range rep.Generator.Examples {
				t.Errorf("generator: %s", x)
			}
		}
		t.Fatalf("%v (seed %d): report %+v, generator %+v", l, seed, rep, rep.Generator)
	}
}

// TestLayouts runs the differential suite, generator check included, on
// every preset, on layouts at NewLayout's limits, and on seeded random
// custom layouts (RandomLayout, -random-layouts of them; a failure names
// the seed and the layout, which -seed and -layout take back), each
// installed from its own plain script, which must pass internal/sqlcheck,
// into a schema of its own with a random node.
func TestLayouts(t *testing.T) {
	s := seed(t)
	pool, _ := database(t)
	now := dbNowMs(t, pool)
	day := int64(24 * time.Hour / time.Millisecond)
	layouts := []struct {
		name string
		l    snowflake.Layout
	}{{"twitter", snowflake.Twitter()}, {"discord", snowflake.Discord()}}
	add := func(name string, l snowflake.Layout, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		layouts = append(layouts, struct {
			name string
			l    snowflake.Layout
		}{name, l})
	}
	// The latest time at idkit.SQLMaxMillis, the last that
	// snowflake_timestamp() dates exactly; and the most sequence bits.
	l, err := snowflake.NewLayout(idkit.SQLMaxMillis-(1<<46-1), 46, 1, 1, 15)
	add("latest time at the SQL's limit", l, err)
	l, err = snowflake.NewLayout(0, 44, 1, 2, 16)
	add("16 sequence bits", l, err)
	l, err = snowflake.NewLayout(0, 44, 17, 1, 1)
	add("1 sequence bit", l, err)
	if *layoutFlag != "" {
		l, err := snowflake.ParseLayout(*layoutFlag)
		add("-layout", l, err)
	}
	randoms := *randomLayoutsFlag
	if testing.Short() {
		// Twitter, one layout at the limits (1 sequence bit), -layout's,
		// and one random custom one.
		layouts = append(layouts[:1], layouts[4:]...)
		randoms = min(randoms, 1)
	}
	r := rand.New(rand.NewPCG(s, 1))
	for i := range randoms {
		add(fmt.Sprintf("random %d", i), RandomLayout(r, now-day, now+day), nil)
	}
	for i, tc := range layouts {
		t.Run(tc.name, func(t *testing.T) {
			t.Logf("layout %q (seed %d)", tc.l.String(), s)
			pool, schema := database(t)
			dc := r.Int64N(tc.l.Max(snowflake.FieldDatacenter) + 1)
			m := r.Int64N(tc.l.Max(snowflake.FieldMachine) + 1)
			installLayout(t, pool, tc.l, schema, dc, m)
			runOK(t, pool, tc.l, schema, s+uint64(i), dc, m)
		})
	}
}

// TestLayoutsSideBySide installs Twitter, Discord and a custom layout in
// three schemas of one database, each with its own node and generator
// state (the custom one with goose through install.Apply, as `sfgen
// install` does; the others from the plain script), and checks that the
// differential suite passes on each, that each schema's
// snowflake_next_id() makes IDs that decode in its own layout to its own
// node and to now, and that CheckInstalled refuses each schema for
// another schema's layout, naming both.
func TestLayoutsSideBySide(t *testing.T) {
	pool, base := database(t)
	ctx := context.Background()
	custom, err := snowflake.NewLayout(1704067200000, 40, 3, 8, 12)
	if err != nil {
		t.Fatal(err)
	}
	schemas := []struct {
		l      snowflake.Layout
		schema string
		dc, m  int64
		goose  bool
	}{
		{snowflake.Twitter(), base + "_twitter", 1, 2, false},
		{snowflake.Discord(), base + "_discord", 3, 4, false},
		{custom, base + "_custom", 5, 200, true},
	}
	for _, s := range schemas {
		t.Cleanup(func() { pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+s.schema+" CASCADE") })
		if s.goose {
			db, err := sql.Open("pgx", pool.Config().ConnString())
			if err != nil {
				t.Fatal(err)
			}
			_, err = install.Apply(ctx, db, sqlgen.Options{Layout: s.l, Schema: s.schema, Datacenter: s.dc, Machine: s.m})
			db.Close()
			if err != nil {
				t.Fatalf("install %v: %v", s.l, err)
			}
		} else {
			installLayout(t, pool, s.l, s.schema, s.dc, s.m)
		}
	}
	for i, s := range schemas {
		runOK(t, pool, s.l, s.schema, uint64(i+1), s.dc, s.m)
		before := dbNowMs(t, pool)
		rows, err := pool.Query(ctx, "SELECT "+s.schema+".snowflake_next_id() FROM pg_catalog.generate_series(1, 100)")
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		after := dbNowMs(t, pool)
		for _, id := range ids {
			p, err := s.l.Decompose(snowflake.ID(id))
			// The generator check above drew IDs too, so an ID may be
			// dated a few milliseconds after the clock (borrowed); never
			// more than the IDs drawn allow.
			if err != nil || p.Datacenter != s.dc || p.Machine != s.m || p.Timestamp < before-LagBoundMS(serverBackends(t, pool), s.l.Bits(snowflake.FieldSequence)) || p.Timestamp > after+10 {
				t.Fatalf("%s: snowflake_next_id() = %d: in %v that is %+v, %v; want node %d/%d, time %d to %d",
					s.schema, id, s.l, p, err, s.dc, s.m, before, after)
			}
		}
		for _, other := range schemas {
			if other.l == s.l {
				continue
			}
			err := CheckInstalled(ctx, catalog.PGX(pool), s.schema, other.l)
			if !errors.Is(err, ErrLayoutMismatch) || !strings.Contains(err.Error(), s.l.String()) || !strings.Contains(err.Error(), other.l.String()) {
				t.Errorf("CheckInstalled(%s, %v) = %v; want ErrLayoutMismatch naming both layouts", s.schema, other.l, err)
			}
		}
		if err := CheckInstalled(ctx, catalog.PGX(pool), s.schema, s.l); err != nil {
			t.Errorf("CheckInstalled(%s, its own layout) = %v", s.schema, err)
		}
	}
}

// TestDiscordExampleInSQL checks Discord's documented ID in SQL rendered
// for the Discord layout, against constants: 175928847299117063 is
// 2016-04-30T11:18:25.796Z, worker 1, process 0, increment 7.
func TestDiscordExampleInSQL(t *testing.T) {
	pool, schema := database(t)
	installLayout(t, pool, snowflake.Discord(), schema, 0, 0)
	ctx := context.Background()
	const id = 175928847299117063
	var got int64
	if err := pool.QueryRow(ctx, "SELECT "+schema+".snowflake_compose(1462015105796, 1, 0, 7)").Scan(&got); err != nil || got != id {
		t.Errorf("snowflake_compose(1462015105796, 1, 0, 7) = %d, %v; want %d", got, err, id)
	}
	var ts, dc, m, seq int64
	var at time.Time
	var text string
	if err := pool.QueryRow(ctx, "SELECT d.timestamp_ms, d.datacenter_id, d.machine_id, d.sequence_id, "+schema+".snowflake_timestamp($1), "+
		"pg_catalog.to_char("+schema+".snowflake_timestamp($1) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM "+schema+".snowflake_decompose($1) d", int64(id)).
		Scan(&ts, &dc, &m, &seq, &at, &text); err != nil {
		t.Fatal(err)
	}
	if ts != 1462015105796 || dc != 1 || m != 0 || seq != 7 {
		t.Errorf("snowflake_decompose(%d) = %d, %d, %d, %d; want 1462015105796, 1, 0, 7", id, ts, dc, m, seq)
	}
	if want := time.Date(2016, 4, 30, 11, 18, 25, 796_000_000, time.UTC); !at.Equal(want) || text != "2016-04-30T11:18:25.796000Z" {
		t.Errorf("snowflake_timestamp(%d) = %v (%s), want %v", id, at, text, want)
	}
	var first, last int64
	if err := pool.QueryRow(ctx, "SELECT "+schema+".snowflake_first_id('2016-04-30T11:18:25.796Z'), "+schema+".snowflake_last_id('2016-04-30T11:18:25.796Z')").Scan(&first, &last); err != nil ||
		first > id || last < id || last-first != 1<<22-1 {
		t.Errorf("snowflake_first_id/last_id of its millisecond = %d, %d, %v; want the 2^22 IDs around %d", first, last, err, id)
	}
}
