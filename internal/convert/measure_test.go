package convert_test

import (
	"context"
	"os"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/convert"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestMeasureLocks measures how long a conversion holds its ACCESS
// EXCLUSIVE locks on tables of a million rows: a bigint key's default
// switch, an integer key's rewrite alone, and with a child table of a
// million rows whose foreign key references it. It runs only with
// SFGEN_MEASURE_CONVERT=1 (the README's figures):
//
//	SFGEN_MEASURE_CONVERT=1 go test -run TestMeasureLocks -v -count=1 ./internal/convert
func TestMeasureLocks(t *testing.T) {
	if os.Getenv("SFGEN_MEASURE_CONVERT") == "" {
		t.Skip("set SFGEN_MEASURE_CONVERT=1 to measure")
	}
	ctx := context.Background()
	db, err := connect.OpenDB(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := install.Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1}); err != nil {
		t.Fatal(err)
	}
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const rows = 1_000_000
	for _, tc := range []struct{ name, setup, table string }{
		{"bigserial, default switch", `CREATE TABLE public.b8 (id bigserial PRIMARY KEY, v text);
			INSERT INTO public.b8 (v) SELECT 'row ' || g FROM generate_series(1, 1000000) g`, "b8"},
		{"serial, rewrite", `CREATE TABLE public.s4 (id serial PRIMARY KEY, v text);
			INSERT INTO public.s4 (v) SELECT 'row ' || g FROM generate_series(1, 1000000) g`, "s4"},
		{"serial and a child's foreign key, rewrite", `CREATE TABLE public.p4 (id serial PRIMARY KEY, v text);
			INSERT INTO public.p4 (v) SELECT 'row ' || g FROM generate_series(1, 1000000) g;
			CREATE TABLE public.c4 (id serial PRIMARY KEY, p integer NOT NULL REFERENCES public.p4 (id));
			INSERT INTO public.c4 (p) SELECT g FROM generate_series(1, 1000000) g`, "p4"},
	} {
		exec(tc.setup)
		exec("VACUUM ANALYZE")
		p, err := convert.Prepare(ctx, db, convert.Options{Sfgen: "ids", Table: tc.table, Rewrite: true, LockTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r, err := p.Apply(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s, %d rows (%v): locks held %v, Apply %v", tc.name, rows, p.Rewrites, r.Locked.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM public." + tc.table).Scan(&n); err != nil || n != rows {
			t.Fatalf("%d rows (%v)", n, err)
		}
	}
}
