package audit_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/audit"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// BenchmarkAuditVsCount fills a table with $SFGEN_AUDIT_BENCH_ROWS rows
// (3,000,000 by default; IDs of 12 nodes, a millisecond apart, composed in
// SQL from generate_series, and a timestamptz column) and, in each
// iteration, side by side: SELECT count(*) (parallel workers allowed, as
// the server's defaults have it), SELECT count(*) on one process, the audit
// and the audit with --time-column. It reports each one's ms/op and the
// ratios audit/count. Run it as
//
//	go test -run '^$' -bench AuditVsCount -benchtime 5x ./internal/audit/
func BenchmarkAuditVsCount(b *testing.B) {
	rows := 3_000_000
	if s := os.Getenv("SFGEN_AUDIT_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("SFGEN_AUDIT_BENCH_ROWS=%q: want a positive integer", s)
		}
		rows = n
	}
	ctx := context.Background()
	db, err := connect.OpenDB(ctx, pgtest.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	l := snowflake.Twitter()
	for _, q := range []string{
		"CREATE TABLE public.big (id bigint, created_at timestamptz)",
		`INSERT INTO public.big SELECT
			((pg_catalog.floor(pg_catalog.date_part('epoch', s.t) * 1000)::int8 - ` + strconv.FormatInt(l.Epoch(), 10) + `) << 22)
			| ((s.i % 4) << 17) | ((s.i % 3) << 12) | (s.i % 4096), s.t
		FROM (SELECT i, pg_catalog.now() - i * interval '1 millisecond' AS t FROM pg_catalog.generate_series(1, ` + strconv.Itoa(rows) + `) i) s`,
		"VACUUM ANALYZE public.big",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	count := func(serial bool) func() error {
		return func() error {
			conn, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			workers := "DEFAULT"
			if serial {
				workers = "0"
			}
			if _, err := conn.ExecContext(ctx, "SET max_parallel_workers_per_gather = "+workers); err != nil {
				return err
			}
			var n int64
			return conn.QueryRowContext(ctx, "SELECT pg_catalog.count(*) FROM public.big").Scan(&n)
		}
	}
	auditRun := func(timeColumn string) func() error {
		return func() error {
			r, err := audit.Run(ctx, db, audit.Options{Table: "big", TimeColumn: timeColumn, Layout: l,
				FutureTolerance: audit.DefaultFutureTolerance, SkewThreshold: audit.DefaultSkewThreshold})
			if err == nil && (r.Rows != int64(rows) || len(r.Nodes) != 12 || !r.Clean()) {
				b.Fatalf("report: rows %d nodes %d future %d invalid %d", r.Rows, len(r.Nodes), r.Future, r.Invalid)
			}
			return err
		}
	}
	variants := []struct {
		name string
		run  func() error
	}{
		{"count", count(false)},
		{"count-serial", count(true)},
		{"audit", auditRun("")},
		{"audit-time", auditRun("created_at")},
	}
	spent := make([]time.Duration, len(variants))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, v := range variants {
			start := time.Now()
			if err := v.run(); err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
			spent[j] += time.Since(start)
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	for j, v := range variants {
		b.ReportMetric(ms(spent[j]), v.name+"-ms/op")
	}
	b.ReportMetric(float64(spent[2])/float64(spent[0]), "audit/count")
	b.ReportMetric(float64(spent[2])/float64(spent[1]), "audit/count-serial")
	b.ReportMetric(float64(spent[3])/float64(spent[0]), "audit-time/count")
	b.ReportMetric(0, "ns/op")
}
