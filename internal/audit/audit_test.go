package audit_test

// Every test here runs against a database of its own from pgtest (a
// throwaway cluster, or the server $DATABASE_URL names).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/audit"
	"github.com/sfgen/sfgen/internal/connect"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlcheck"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := connect.OpenDB(context.Background(), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func compose(t *testing.T, l snowflake.Layout, at time.Time, dc, m, seq int64) int64 {
	t.Helper()
	id, err := l.Compose(at.UnixMilli(), dc, m, seq)
	if err != nil {
		t.Fatal(err)
	}
	return int64(id)
}

// insert puts ids (nil for NULL) into table public.ids (id bigint).
func insert(t *testing.T, db *sql.DB, table string, ids ...any) {
	t.Helper()
	for _, id := range ids {
		exec(t, db, "INSERT INTO public."+pgident.Quote(table)+" (id) VALUES ($1)", id)
	}
}

func ms(tm time.Time) time.Time { return time.UnixMilli(tm.UnixMilli()).UTC() }

// dbNow returns the database's now(), to the millisecond: the bounds of a
// report's Now are two of these, one before Run and one after it, never
// the test's own clock.
func dbNow(t *testing.T, db *sql.DB) time.Time {
	t.Helper()
	var ms int64
	if err := db.QueryRow("SELECT floor(date_part('epoch', now()) * 1000)::int8").Scan(&ms); err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(ms).UTC()
}

// TestPlantedAnomalies plants, among IDs of one node, IDs of another
// node, one dated tomorrow, one negative and a NULL, in each layout, and
// checks the report counts each exactly.
func TestPlantedAnomalies(t *testing.T) {
	custom, err := snowflake.ParseLayout("epoch=1600000000000 timestamp=41 datacenter=3 machine=7 sequence=12")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []snowflake.Layout{snowflake.Twitter(), snowflake.Discord(), custom} {
		t.Run(l.String(), func(t *testing.T) {
			db := open(t)
			exec(t, db, "CREATE TABLE public.ids (id bigint)")
			now := time.Now()
			t0, t1, t2 := now.Add(-3*time.Hour), now.Add(-2*time.Hour), now.Add(-time.Hour)
			tomorrow := now.Add(24 * time.Hour)
			insert(t, db, "ids",
				compose(t, l, t0, 1, 2, 0), compose(t, l, t1, 1, 2, 1), compose(t, l, t2, 1, 2, 0),
				compose(t, l, t1, 3, 5, 7), compose(t, l, tomorrow, 3, 5, 0),
				int64(-42), nil)
			before := dbNow(t, db)
			r, err := audit.Run(context.Background(), db, audit.Options{Table: "ids", Layout: l, FutureTolerance: audit.DefaultFutureTolerance})
			if err != nil {
				t.Fatal(err)
			}
			after := dbNow(t, db)
			if r.Rows != 7 || r.Nulls != 1 || r.Invalid != 1 || r.Future != 1 || r.Clean() || r.Distributed {
				t.Errorf("rows %d nulls %d invalid %d future %d clean %v distributed %v; want 7 1 1 1 false false", r.Rows, r.Nulls, r.Invalid, r.Future, r.Clean(), r.Distributed)
			}
			want := []audit.Node{
				{Datacenter: 1, Machine: 2, Rows: 3, First: ms(t0), Last: ms(t2)},
				{Datacenter: 3, Machine: 5, Rows: 2, First: ms(t1), Last: ms(tomorrow), Future: 1},
			}
			if fmt.Sprint(r.Nodes) != fmt.Sprint(want) {
				t.Errorf("nodes\n%v\nwant\n%v", r.Nodes, want)
			}
			if r.MinTime == nil || !r.MinTime.Equal(ms(t0)) || !r.MaxTime.Equal(ms(tomorrow)) {
				t.Errorf("min %v max %v; want %v %v", r.MinTime, r.MaxTime, ms(t0), ms(tomorrow))
			}
			if r.Now.Before(before) || r.Now.After(after) || r.FutureAfter != r.Now.Add(audit.DefaultFutureTolerance) {
				t.Errorf("now %v future after %v; want the database's now(), from %v to %v, plus %v", r.Now, r.FutureAfter, before, after, audit.DefaultFutureTolerance)
			}
		})
	}
}

// TestFutureTolerance: an ID 10 minutes ahead is future with a 1 minute
// tolerance and not with a 1 hour one.
func TestFutureTolerance(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.ids (id bigint)")
	insert(t, db, "ids", compose(t, snowflake.Twitter(), time.Now().Add(10*time.Minute), 0, 0, 0))
	for _, c := range []struct {
		tol  time.Duration
		want int64
	}{{time.Minute, 1}, {time.Hour, 0}} {
		r, err := audit.Run(context.Background(), db, audit.Options{Table: "ids", Layout: snowflake.Twitter(), FutureTolerance: c.tol})
		if err != nil {
			t.Fatal(err)
		}
		if r.Future != c.want || r.Nodes[0].Future != c.want {
			t.Errorf("tolerance %v: future %d (node %d); want %d", c.tol, r.Future, r.Nodes[0].Future, c.want)
		}
	}
}

func TestCleanAndEmpty(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.ids (id bigint)")
	r, err := audit.Run(context.Background(), db, audit.Options{Table: "ids", Layout: snowflake.Twitter()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows != 0 || len(r.Nodes) != 0 || r.MinTime != nil || !r.Clean() {
		t.Errorf("empty table: %+v", r)
	}
	exec(t, db, "INSERT INTO public.ids SELECT ((pg_catalog.floor(pg_catalog.date_part('epoch', now() - i * interval '1 second') * 1000)::int8 - $1) << 22) | (5 << 17) | (9 << 12) | i FROM generate_series(1, 1000) i", snowflake.TwitterEpoch)
	r, err = audit.Run(context.Background(), db, audit.Options{Table: "ids", Layout: snowflake.Twitter()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows != 1000 || !r.Clean() || len(r.Nodes) != 1 || r.Nodes[0].Datacenter != 5 || r.Nodes[0].Machine != 9 || r.Nodes[0].Rows != 1000 {
		t.Errorf("clean table: %+v", r)
	}
}

// TestEmptyTableNow: the report of an empty table has the database's
// now(), not 1970-01-01 (without a time column the query has no row to
// read it from), in one statement, with a time column and in chunks.
func TestEmptyTableNow(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.ids (id bigint, at timestamptz)")
	dbNow := func() time.Time { return dbNow(t, db) }
	for _, c := range []struct {
		name      string
		o         audit.Options
		minChunks int64
	}{
		{"one statement", audit.Options{Table: "ids", Layout: snowflake.Twitter(), FutureTolerance: time.Minute, Workers: 1}, 1024},
		{"time column", audit.Options{Table: "ids", TimeColumn: "at", Layout: snowflake.Twitter(), FutureTolerance: time.Minute, Workers: 1}, 1024},
		{"chunks", audit.Options{Table: "ids", Layout: snowflake.Twitter(), FutureTolerance: time.Minute, Workers: 4}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer audit.SetMinChunkPages(c.minChunks)()
			before := dbNow()
			r, err := audit.Run(context.Background(), db, c.o)
			if err != nil {
				t.Fatal(err)
			}
			after := dbNow()
			if r.Rows != 0 || r.Now.Before(before) || r.Now.After(after) {
				t.Errorf("empty table: rows %d, now %v; want 0 and the database's now(), from %v to %v", r.Rows, r.Now, before, after)
			}
			if want := r.Now.Add(time.Minute); !r.FutureAfter.Equal(want) {
				t.Errorf("future after %v; want now + 1m, %v", r.FutureAfter, want)
			}
		})
	}
}

// TestSkew compares ID times with a time column: |skew| 0, 500, 2000 and
// 3000 ms (the last one negative), a NULL time, a negative ID. Each value
// is alone in its bucket, so the percentiles are percentile_disc's exactly.
func TestSkew(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.ev (id bigint, at timestamptz)")
	base := time.Now().Add(-time.Hour)
	for _, off := range []time.Duration{0, 500 * time.Millisecond, 2 * time.Second, -3 * time.Second} {
		exec(t, db, "INSERT INTO public.ev VALUES ($1, $2)", compose(t, snowflake.Twitter(), base, 0, 1, 0), ms(base).Add(-off))
	}
	exec(t, db, "INSERT INTO public.ev VALUES ($1, NULL), (-1, now())", compose(t, snowflake.Twitter(), base, 0, 1, 1))
	r, err := audit.Run(context.Background(), db, audit.Options{Table: "ev", TimeColumn: "at", Layout: snowflake.Twitter(), SkewThreshold: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Skew
	want := audit.Skew{Column: "at", ThresholdMs: 1000, P50AbsMs: 500, P99AbsMs: 3000, MinMs: -3000, MaxMs: 2000, MaxAbsMs: 3000, Beyond: 2, NullTimes: 1}
	if s == nil {
		t.Fatal("no skew")
	}
	if got := *s; got != want {
		t.Errorf("skew %+v\nwant %+v", got, want)
	}
	if n := r.Nodes[0].Skew; n == nil || n.Beyond != 2 || n.MaxAbsMs != 3000 {
		t.Errorf("node skew %+v", n)
	}
	r, err = audit.Run(context.Background(), db, audit.Options{Table: "ev", TimeColumn: "at", Layout: snowflake.Twitter(), SkewThreshold: 2500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Skew.Beyond != 1 {
		t.Errorf("threshold 2.5s: beyond %d; want 1", r.Skew.Beyond)
	}
}

// TestMissing: a missing table, column or time column, or a column of
// another type, is one typed error naming it, before any scan.
func TestMissing(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.ev (id bigint, at timestamptz, label text)")
	exec(t, db, "CREATE SCHEMA other; CREATE TABLE other.ids (id bigint)")
	for _, c := range []struct {
		o    audit.Options
		is   error
		text string
	}{
		{audit.Options{Table: "nope"}, audit.ErrNotFound, "table public.nope does not exist"},
		{audit.Options{Table: "EV"}, audit.ErrNotFound, "table public.EV does not exist"},
		{audit.Options{Table: "ids"}, audit.ErrNotFound, "table public.ids does not exist"},
		{audit.Options{Schema: "nope", Table: "ev"}, audit.ErrNotFound, "table nope.ev does not exist"},
		{audit.Options{Table: "ev", Column: "uid"}, audit.ErrNotFound, "column public.ev.uid does not exist"},
		{audit.Options{Table: "ev", TimeColumn: "created"}, audit.ErrNotFound, "time column public.ev.created does not exist"},
		{audit.Options{Table: "ev", Column: "label"}, audit.ErrColumnType, "column label is of type text; want one of bigint, integer, smallint"},
		{audit.Options{Table: "ev", Column: "at"}, audit.ErrColumnType, "column at is of type timestamp with time zone"},
		{audit.Options{Table: "ev", TimeColumn: "id"}, audit.ErrColumnType, "column id is of type bigint; want one of timestamp with time zone"},
		{audit.Options{Table: ""}, audit.ErrInvalidName, `invalid table name "": empty`},
		{audit.Options{Table: strings.Repeat("t", 64)}, audit.ErrInvalidName, "64 bytes; want at most 63"},
		{audit.Options{Table: "a\x00b"}, audit.ErrInvalidName, "NUL"},
		{audit.Options{Table: "\xff"}, audit.ErrInvalidName, "UTF-8"},
		{audit.Options{Table: "ev", FutureTolerance: -time.Second}, audit.ErrBadDuration, "future tolerance -1s out of range"},
	} {
		o := c.o
		o.Layout = snowflake.Twitter()
		_, err := audit.Run(context.Background(), db, o)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.text) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v; want %v containing %q on one line", c.o, err, c.is, c.text)
		}
	}
	if _, err := audit.Run(context.Background(), db, audit.Options{Table: "ev"}); !errors.Is(err, snowflake.ErrZeroLayout) {
		t.Errorf("zero layout: %v", err)
	}
	if r, err := audit.Run(context.Background(), db, audit.Options{Schema: "other", Table: "ids", Layout: snowflake.Twitter()}); err != nil || r.Schema != "other" {
		t.Errorf("other.ids: %v %+v", err, r)
	}
}

// TestInjection: names that would break out of unquoted or badly quoted
// SQL are looked up exactly (not found, nothing dropped), and a table,
// schema and column really named so are audited.
func TestInjection(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.victim (id bigint)")
	attacks := []string{
		`victim; DROP TABLE public.victim; --`,
		`victim" ; DROP TABLE public.victim; --`,
		`victim"" ; DROP TABLE public.victim; --`,
		`public.victim`,
		`victim'`,
		`(SELECT 1)`,
	}
	for _, a := range attacks {
		for _, o := range []audit.Options{{Table: a}, {Schema: a, Table: "victim"}, {Table: "victim", Column: a}, {Table: "victim", TimeColumn: a}} {
			o.Layout = snowflake.Twitter()
			if _, err := audit.Run(context.Background(), db, o); !errors.Is(err, audit.ErrNotFound) {
				t.Errorf("%+v: %v; want not found", o, err)
			}
		}
	}
	weird := `x"; DROP TABLE public.victim; --`
	exec(t, db, "CREATE SCHEMA "+pgident.Quote(weird))
	exec(t, db, "CREATE TABLE "+pgident.Quote(weird)+"."+pgident.Quote(weird)+" ("+pgident.Quote(weird)+" bigint, "+pgident.Quote(weird+"t")+" timestamptz)")
	exec(t, db, "INSERT INTO "+pgident.Quote(weird)+"."+pgident.Quote(weird)+" VALUES ($1, now())", compose(t, snowflake.Twitter(), time.Now(), 2, 3, 0))
	r, err := audit.Run(context.Background(), db, audit.Options{Schema: weird, Table: weird, Column: weird, TimeColumn: weird + "t", Layout: snowflake.Twitter()})
	if err != nil || r.Rows != 1 || len(r.Nodes) != 1 || r.Nodes[0].Datacenter != 2 {
		t.Errorf("weird names: %v %+v", err, r)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM public.victim").Scan(&n); err != nil {
		t.Errorf("victim: %v", err)
	}
}

// TestQueryQualified: the statement, whole or for one chunk of pages,
// names nothing through the search_path but the audited table's schema.
func TestQueryQualified(t *testing.T) {
	sqlcheck.SkipUnsupported(t)
	for _, o := range []audit.Options{
		{Table: "t", Layout: snowflake.Twitter()},
		{Schema: "My Schema", Table: `a"b`, Column: "c", TimeColumn: "ts", Layout: snowflake.Discord(), LegacyBelow: 1 << 40},
	} {
		schema := o.Schema
		if schema == "" {
			schema = audit.DefaultSchema
		}
		for _, q := range []string{audit.Query(o), audit.ChunkQuery(o)} {
			if f := sqlcheck.Check([]byte(q), sqlcheck.Options{OwnSchemas: []string{pgident.Quote(schema)}}); len(f) > 0 {
				t.Errorf("%s\nfindings: %v", q, f)
			}
		}
	}
}

// TestLookalikes: operators and functions in public that shadow
// pg_catalog's for an explicit search_path "public, pg_catalog" do not
// change the report.
func TestLookalikes(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.ids (id bigint)")
	insert(t, db, "ids", compose(t, snowflake.Twitter(), time.Now().Add(-time.Hour), 4, 6, 0), int64(-1))
	exec(t, db, `CREATE FUNCTION public.evil_shr(bigint, integer) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint';
		CREATE OPERATOR public.>> (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = public.evil_shr);
		CREATE FUNCTION public.count(bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint';
		CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE sql AS $$SELECT '2000-01-01'::timestamptz$$`)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "SET search_path = public, pg_catalog"); err != nil {
		t.Fatal(err)
	}
	var probe int64
	if err := conn.QueryRowContext(context.Background(), "SELECT 4096::bigint >> 1").Scan(&probe); err != nil || probe != 0 {
		t.Fatalf("the lookalike >> is not in effect: %d %v", probe, err)
	}
	r, err := audit.Run(context.Background(), conn, audit.Options{Table: "ids", Layout: snowflake.Twitter()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows != 2 || r.Invalid != 1 || len(r.Nodes) != 1 || r.Nodes[0].Datacenter != 4 || r.Nodes[0].Machine != 6 || r.Now.Year() == 2000 {
		t.Errorf("report under lookalikes: %+v", r)
	}
}

func TestValidateName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{{"t", true}, {"My Table", true}, {`a"b`, true}, {"ü", true}, {strings.Repeat("x", 63), true},
		{"", false}, {strings.Repeat("x", 64), false}, {"a\x00", false}, {"\xc3", false}} {
		err := audit.ValidateName("table", c.name)
		if (err == nil) != c.ok {
			t.Errorf("%q: %v; want ok %v", c.name, err, c.ok)
		}
		var ne *audit.NameError
		if err != nil && (!errors.As(err, &ne) || ne.Field != "table" || ne.Value != c.name) {
			t.Errorf("%q: %#v", c.name, err)
		}
	}
}

// TestLongNameCut: a rejected name of 100 KB is quoted by its first 64
// bytes at most, cut before a character, with "…" and its length; the
// NameError keeps it whole.
func TestLongNameCut(t *testing.T) {
	for _, c := range []struct {
		name, quoted string
	}{
		{strings.Repeat("x", 100<<10), `"` + strings.Repeat("x", 64) + `"…`},
		// 62 bytes, then "ü" (2 bytes) is whole at 64; then "€" (3 bytes)
		// from byte 63 would be cut inside, so it is left out.
		{strings.Repeat("a", 62) + "ü" + strings.Repeat("b", 100<<10), `"` + strings.Repeat("a", 62) + `ü"…`},
		{strings.Repeat("a", 63) + "€" + strings.Repeat("b", 100<<10), `"` + strings.Repeat("a", 63) + `"…`},
	} {
		err := audit.ValidateName("table", c.name)
		want := fmt.Sprintf("invalid table name %s: %d bytes; want at most 63, PostgreSQL's identifier limit", c.quoted, len(c.name))
		if err == nil || err.Error() != want {
			t.Errorf("a %d-byte name: %.200v; want %s", len(c.name), err, want)
		}
		var ne *audit.NameError
		if !errors.As(err, &ne) || ne.Value != c.name {
			t.Errorf("a %d-byte name: the NameError does not keep it whole", len(c.name))
		}
	}
	// Up to 64 bytes a name is quoted whole.
	n64 := strings.Repeat("y", 64)
	if err := audit.ValidateName("column", n64); err == nil || err.Error() != `invalid column name "`+n64+`": 64 bytes; want at most 63, PostgreSQL's identifier limit` {
		t.Errorf("a 64-byte name: %v", err)
	}
}

// TestFutureCutoffClamped: in a layout whose epoch is after now every ID is
// future; in one whose latest time is long past none is (the cut-off's
// offset is clamped to the layout's, not shifted past the bigint).
func TestFutureCutoffClamped(t *testing.T) {
	later, err := snowflake.ParseLayout("epoch=4102444800000 timestamp=41 datacenter=5 machine=5 sequence=12") // 2100-01-01
	if err != nil {
		t.Fatal(err)
	}
	past, err := snowflake.ParseLayout("epoch=0 timestamp=30 datacenter=10 machine=11 sequence=12") // ends 1970-01-13
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		l    snowflake.Layout
		want int64
	}{{later, 3}, {past, 0}} {
		db := open(t)
		exec(t, db, "CREATE TABLE public.ids (id bigint)")
		insert(t, db, "ids", compose(t, c.l, c.l.MinTime(), 0, 0, 0), compose(t, c.l, c.l.MinTime().Add(time.Hour), 1, 1, 1), compose(t, c.l, c.l.MaxTime(), 1, 1, 0))
		r, err := audit.Run(context.Background(), db, audit.Options{Table: "ids", Layout: c.l, FutureTolerance: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if r.Future != c.want || r.Rows != 3 || !r.MaxTime.Equal(c.l.MaxTime()) {
			t.Errorf("%v: future %d rows %d max %v; want %d 3 %v", c.l, r.Future, r.Rows, r.MaxTime, c.want, c.l.MaxTime())
		}
	}
}

// TestSkewPercentiles: 2000 rows on two nodes, |skew| i*37 ms (alternate
// signs, the odd i on node 1): p50 and p99, per node and for the table,
// are the exact percentile_disc computed here, or at most 0.1% of (1 ms +
// it) above it.
func TestSkewPercentiles(t *testing.T) {
	db := open(t)
	exec(t, db, "CREATE TABLE public.ev (id bigint, at timestamptz)")
	base := ms(time.Now().Add(-time.Hour))
	exec(t, db, `INSERT INTO public.ev SELECT $1::int8 | ((i % 2) << 12), $2::timestamptz - (CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END) * i * 37 * interval '1 millisecond'
		FROM generate_series(1, 2000) i`, compose(t, snowflake.Twitter(), base, 0, 0, 0), base)
	r, err := audit.Run(context.Background(), db, audit.Options{Table: "ev", TimeColumn: "at", Layout: snowflake.Twitter(), SkewThreshold: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	disc := func(vals []float64, q float64) float64 { // vals sorted
		return vals[int(math.Ceil(q*float64(len(vals))))-1]
	}
	var byNode [2][]float64
	var table []float64
	for i := 1; i <= 2000; i++ {
		v := float64(i * 37)
		table = append(table, v)
		byNode[i%2] = append(byNode[i%2], v)
	}
	check := func(what string, s *audit.Skew, vals []float64) {
		t.Helper()
		for _, c := range []struct {
			q   float64
			got float64
		}{{0.5, s.P50AbsMs}, {0.99, s.P99AbsMs}} {
			want := disc(vals, c.q)
			if c.got < want || c.got-want > (1+want)/audit.HistogramBucketsPerE {
				t.Errorf("%s p%v: %v; want %v (+0.1%%)", what, c.q*100, c.got, want)
			}
		}
		if s.MaxAbsMs != vals[len(vals)-1] {
			t.Errorf("%s max %v; want %v", what, s.MaxAbsMs, vals[len(vals)-1])
		}
	}
	check("table", r.Skew, table)
	if len(r.Nodes) != 2 {
		t.Fatalf("nodes %v", r.Nodes)
	}
	for _, n := range r.Nodes {
		check(fmt.Sprintf("node %d", n.Machine), n.Skew, byNode[n.Machine])
	}
}
