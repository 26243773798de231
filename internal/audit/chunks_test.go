package audit_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/sfgen/sfgen/internal/audit"
	"github.com/sfgen/sfgen/internal/snowflake"
)

// TestChunksAgree: a table read in chunks on several connections gives
// the very report one statement gives (nodes, NULLs, negatives, future
// IDs, first and last times).
func TestChunksAgree(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.ids (id bigint)")
	now := time.Now()
	// 60,000 IDs of five nodes over the last hour and 5,000 of them again,
	// spread over the table's pages by a random order; then the anomalies.
	exec(t, db, `INSERT INTO public.ids
		SELECT ((($1::int8 - 3600000 + g) - 1288834974657) << 22) | ((g % 5) << 12) | (g % 4096)
		FROM pg_catalog.generate_series(1, 60000) g ORDER BY pg_catalog.random()`, now.UnixMilli())
	exec(t, db, `INSERT INTO public.ids SELECT id FROM public.ids ORDER BY pg_catalog.random() LIMIT 5000`)
	insert(t, db, "ids", nil, nil, int64(-5), compose(t, snowflake.Twitter, now.Add(24*time.Hour), 7, 7, 0))
	exec(t, db, "VACUUM ANALYZE public.ids")
	defer audit.SetMinChunkPages(1)()
	db.SetMaxIdleConns(10) // so that the chunks' connections stay to be counted

	o := audit.Options{Table: "ids", Layout: snowflake.Twitter, FutureTolerance: audit.DefaultFutureTolerance}
	o.Workers = 1
	one, err := audit.Run(context.Background(), db, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{2, 3, 7} {
		o.Workers = w
		got, err := audit.Run(context.Background(), db, o)
		if err != nil {
			t.Fatalf("%d workers: %v", w, err)
		}
		// now() is each run's own.
		got.Now, got.FutureAfter = one.Now, one.FutureAfter
		if !reflect.DeepEqual(got, one) {
			t.Errorf("%d workers: %+v\none statement: %+v", w, got, one)
		}
	}
	if one.Rows != 65004 || one.Nulls != 2 || one.Invalid != 1 || one.Future != 1 || len(one.Nodes) != 6 {
		t.Errorf("report %+v; want 65004 rows, 2 NULLs, 1 invalid, 1 future, 6 nodes", one)
	}
	if n := db.Stats().OpenConnections; n < 3 {
		t.Errorf("%d connections opened; chunks should have run on several", n)
	}
}
