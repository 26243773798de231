package audit_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/audit"
)

// TestChunksAgree: a table read in chunks on several connections gives
// the very report one statement gives (nodes, NULLs, negatives, future
// IDs, first and last times).
func TestChunksAgree(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.ids (id bigint, at timestamptz)")
	now := time.Now()
	// 60,000 IDs of five nodes over the last hour and 5,000 of them again,
	// spread over the table's pages by a random order; then the anomalies.
	exec(t, db, `INSERT INTO public.ids
		SELECT ((($1::int8 - 3600000 + g) - 1288834974657) << 22) | ((g % 5) << 12) | (g % 4096)
		FROM pg_catalog.generate_series(1, 60000) g ORDER BY pg_catalog.random()`, now.UnixMilli())
	exec(t, db, `INSERT INTO public.ids SELECT id FROM public.ids ORDER BY pg_catalog.random() LIMIT 5000`)
	insert(t, db, "ids", nil, nil, int64(-5), compose(t, snowflake.Twitter(), now.Add(24*time.Hour), 7, 7, 0))
	// The time column: each ID's time, skewed by up to ±5 s, some NULL.
	exec(t, db, `UPDATE public.ids SET at = pg_catalog.to_timestamp(((id >> 22) + 1288834974657 + (pg_catalog.random() * 10000 - 5000)::int8) / 1000.0)
		WHERE id > 0 AND pg_catalog.random() < 0.98`)
	exec(t, db, "VACUUM ANALYZE public.ids")
	defer audit.SetMinChunkPages(1)()
	db.SetMaxIdleConns(10) // so that the chunks' connections stay to be counted

	var one *audit.Report
	for _, timeColumn := range []string{"", "at"} {
		o := audit.Options{Table: "ids", TimeColumn: timeColumn, Layout: snowflake.Twitter(),
			FutureTolerance: audit.DefaultFutureTolerance, SkewThreshold: 2 * time.Second, Workers: 1}
		want, err := audit.Run(context.Background(), db, o)
		if err != nil {
			t.Fatal(err)
		}
		if timeColumn == "" {
			one = want
		} else if want.Skew == nil || want.Skew.Beyond == 0 || want.Skew.NullTimes == 0 {
			t.Fatalf("skew %+v; want some beyond 2 s and some NULL times", want.Skew)
		}
		for _, w := range []int{2, 3, 7} {
			o.Workers = w
			var calls [][2]int // one call at a time: no lock needed
			o.Progress = func(done, total int) { calls = append(calls, [2]int{done, total}) }
			got, err := audit.Run(context.Background(), db, o)
			if err != nil {
				t.Fatalf("%d workers: %v", w, err)
			}
			// Progress: each part once, counted up to their number, 8 a
			// worker.
			if parts := 8 * w; len(calls) != parts || calls[0] != [2]int{1, parts} || calls[parts-1] != [2]int{parts, parts} {
				t.Errorf("%d workers: progress %v; want 1 to %d of %d", w, calls, parts, parts)
			}
			// now() is each run's own.
			got.Now, got.FutureAfter = want.Now, want.FutureAfter
			if !reflect.DeepEqual(got, want) {
				t.Errorf("time column %q, %d workers:\n%s\none statement:\n%s", timeColumn, w, dump(got), dump(want))
			}
		}
	}
	if one.Rows != 65004 || one.Nulls != 2 || one.Invalid != 1 || one.Future != 1 || len(one.Nodes) != 6 {
		t.Errorf("report %+v; want 65004 rows, 2 NULLs, 1 invalid, 1 future, 6 nodes", one)
	}
	if n := db.Stats().OpenConnections; n < 3 {
		t.Errorf("%d connections opened; chunks should have run on several", n)
	}
}

// dump is r as indented JSON, to compare by eye.
func dump(r *audit.Report) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}
