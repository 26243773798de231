package sfgenpg_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/sfgenpg"
)

// scanRows is how many rows each iteration of BenchmarkScan reads.
const scanRows = 100_000

// scanQuery returns scanRows bigints of the size of today's IDs (above
// 255, so an int64 in an interface takes an allocation, as a real ID's
// does).
const scanQuery = `SELECT 1724551110456668202 + g FROM generate_series(1, 100000) AS g`

// BenchmarkScan measures what scanning a bigint into an sfgen.ID costs,
// beside an int64, over pgx directly (with and without RegisterPgxTypes)
// and over database/sql with pgx's stdlib driver: one iteration reads
// scanRows rows, and ns/row is the whole query's time a row. Without
// RegisterPgxTypes pgx scans an ID, a NullID and a *ID through
// sql.Scanner: pgx's own Int64Scanner takes a pgtype.Int8, which package
// sfgen, standard library only, cannot name, and a sql.Scanner is
// planned before any underlying type would be. The query's time on the
// server dwarfs the scan's; BenchmarkScanPlan measures the scan alone.
//
//	go test -run '^$' -bench 'Scan$' -benchmem -count 6 ./sfgenpg
func BenchmarkScan(b *testing.B) {
	ctx := context.Background()
	dsn := pgtest.DSN(b)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)

	pgxScan := func(b *testing.B, dest any) {
		dests := []any{dest} // not a slice a row, as rows.Scan(dest) would make
		b.ReportAllocs()
		for b.Loop() {
			rows, err := conn.Query(ctx, scanQuery)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				if err := rows.Scan(dests...); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if err := rows.Err(); err != nil || n != scanRows {
				b.Fatalf("%d rows, %v", n, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*scanRows), "ns/row")
	}
	sqlScan := func(b *testing.B, dest any) {
		dests := []any{dest}
		b.ReportAllocs()
		for b.Loop() {
			rows, err := db.QueryContext(ctx, scanQuery)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				if err := rows.Scan(dests...); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if err := rows.Err(); err != nil || n != scanRows {
				b.Fatalf("%d rows, %v", n, err)
			}
			rows.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*scanRows), "ns/row")
	}
	var (
		i64  int64
		id   sfgen.ID
		null sfgen.NullID
		ptr  *sfgen.ID
	)
	b.Run("pgx/int64", func(b *testing.B) { pgxScan(b, &i64) })
	b.Run("pgx/ID", func(b *testing.B) { pgxScan(b, &id) })
	b.Run("pgx/NullID", func(b *testing.B) { pgxScan(b, &null) })
	b.Run("pgx/ptrID", func(b *testing.B) { pgxScan(b, &ptr) })
	registered, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { registered.Close(context.Background()) })
	sfgenpg.RegisterPgxTypes(registered.TypeMap())
	for _, c := range []struct {
		name string
		dest any
	}{{"ID", &id}, {"NullID", &null}, {"ptrID", &ptr}} {
		b.Run("pgx-registered/"+c.name, func(b *testing.B) {
			saved := conn
			conn = registered
			defer func() { conn = saved }()
			pgxScan(b, c.dest)
		})
	}
	b.Run("database-sql/int64", func(b *testing.B) { sqlScan(b, &i64) })
	b.Run("database-sql/ID", func(b *testing.B) { sqlScan(b, &id) })
	b.Run("database-sql/NullID", func(b *testing.B) { sqlScan(b, &null) })
	b.Run("database-sql/ptrID", func(b *testing.B) { sqlScan(b, &ptr) })
}

// BenchmarkScanPlan measures one binary int8 scanned into each type by the
// plan pgx's rows.Scan uses for it (planned once a query, as pgx does),
// with and without RegisterPgxTypes, without a server: the part of
// BenchmarkScan's ns/row that the type makes, free of the query's noise.
//
//	go test -run '^$' -bench 'Plan$' -benchmem -count 6 ./sfgenpg
func BenchmarkScanPlan(b *testing.B) {
	src := binary.BigEndian.AppendUint64(nil, 1724551110456668202)
	var (
		i64  int64
		id   sfgen.ID
		null sfgen.NullID
		ptr  *sfgen.ID
	)
	registered := pgtype.NewMap()
	sfgenpg.RegisterPgxTypes(registered)
	for _, c := range []struct {
		name string
		m    *pgtype.Map
		dst  any
	}{
		{"int64", pgtype.NewMap(), &i64},
		{"ID", pgtype.NewMap(), &id},
		{"NullID", pgtype.NewMap(), &null},
		{"ptrID", pgtype.NewMap(), &ptr},
		{"ID-registered", registered, &id},
		{"NullID-registered", registered, &null},
		{"ptrID-registered", registered, &ptr},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			plan := c.m.PlanScan(pgtype.Int8OID, pgtype.BinaryFormatCode, c.dst)
			for b.Loop() {
				if err := plan.Scan(src, c.dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	if i64 != 1724551110456668202 || id != 1724551110456668202 || null.ID != id || *ptr != id {
		b.Fatal(i64, id, null, ptr)
	}
}

// BenchmarkEncodePlan measures one argument encoded as a binary int8, as
// pgx encodes a query's arguments, with and without RegisterPgxTypes.
func BenchmarkEncodePlan(b *testing.B) {
	registered := pgtype.NewMap()
	sfgenpg.RegisterPgxTypes(registered)
	var (
		i64  any = int64(1724551110456668202)
		id   any = sfgen.ID(1724551110456668202)
		null any = sfgen.NullID{ID: 1724551110456668202, Valid: true}
	)
	for _, c := range []struct {
		name  string
		m     *pgtype.Map
		value any
	}{
		{"int64", pgtype.NewMap(), i64},
		{"ID", pgtype.NewMap(), id},
		{"NullID", pgtype.NewMap(), null},
		{"ID-registered", registered, id},
		{"NullID-registered", registered, null},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 8)
			for b.Loop() {
				out, err := c.m.Encode(pgtype.Int8OID, pgtype.BinaryFormatCode, c.value, buf[:0])
				if err != nil || len(out) != 8 {
					b.Fatal(out, err)
				}
			}
		})
	}
}
