package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestRun measures on a fresh database with pg_walinspect, and checks that
// the report holds both variants, the sequence WAL split and the lag.
func TestRun(t *testing.T) {
	ctx := context.Background()
	dsn, conn := benchDB(t)
	// A compared function over a sequence of its own: its rounds write
	// sequence WAL too.
	if _, err := conn.Exec(ctx, `CREATE SEQUENCE bench_ids.peer_ids;
		CREATE FUNCTION bench_ids.peer_id() RETURNS bigint LANGUAGE sql AS $$SELECT pg_catalog.nextval('bench_ids.peer_ids')$$`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		t.Skipf("no pg_walinspect: %v", err)
	}
	// pg_walinspect reads the rounds' WAL after the last round; on a
	// server other tests share, their DROP DATABASE checkpoints can remove
	// it first ("requested WAL segment ... has already been removed"). A
	// temporary slot, gone with this session, keeps it where the role may
	// make one.
	if _, err := conn.Exec(ctx, "SELECT pg_catalog.pg_create_physical_replication_slot($1, true, true)", fmt.Sprintf("%sbench_%d", pgtest.Prefix, os.Getpid())); err != nil {
		t.Logf("no replication slot to keep the rounds' WAL (another test's checkpoint may remove it): %v", err)
	}
	before := pgtest.Relations(t, conn)
	var progress bytes.Buffer
	probe := &lagProbe{t: t, conn: conn, schema: "bench_ids", progress: &progress}
	res, err := Run(ctx, Config{DSN: dsn, Schema: "bench_ids", Clients: 3, Duration: 600 * time.Millisecond, Rounds: 2,
		StatementRows: 3000, StatementRuns: 3, Compare: []string{"bench_ids.peer_id"}, Progress: probe})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Compared) != 1 {
		t.Fatalf("compared %+v, want bench_ids.peer_id()", res.Compared)
	}
	for _, v := range []Variant{res.Bigserial, res.Snowflake, res.Compared[0].Variant} {
		if v.Rows == 0 || v.TPS <= 0 || len(v.RoundTPS) != 2 || v.WALPerRow <= 0 || v.SeqWALPerID < 0 {
			t.Errorf("%s: %+v\nprogress:\n%s", v.Name, v, progress.String())
		}
	}
	if res.SeqWALNote != "" {
		t.Errorf("SeqWALNote %q with pg_walinspect installed", res.SeqWALNote)
	}
	// nextval() logs a sequence record every 32 values.
	if c := res.Compared[0].Variant; c.SeqWALPerID <= 0 {
		t.Errorf("%s: no sequence WAL per ID: %+v", c.Name, c)
	}
	if len(res.RoundRatios) != 2 || res.RoundRatios[0] <= 0 {
		t.Errorf("round ratios %v, want one per round", res.RoundRatios)
	}
	if l := res.Lag; l.Rows < res.Snowflake.Rows || l.Min < 0 || l.P50 < l.Min || l.P99 < l.P50 || l.Max < l.P99 {
		t.Errorf("lag %+v for %d rows; want every row, 0 <= min <= p50 <= p99 <= max", l, res.Snowflake.Rows)
	}
	// The same figures, worked out here in Go from the rows themselves.
	if len(probe.lags) == 0 {
		t.Fatalf("the probe read no rows; progress:\n%s", progress.String())
	}
	want := Lag{P50: quantile(probe.lags, 0.5), P99: quantile(probe.lags, 0.99), Max: quantile(probe.lags, 1), Min: quantile(probe.lags, 0), Rows: int64(len(probe.lags))}
	if got := res.Lag; got.Rows != want.Rows || !near(got.P50, want.P50) || !near(got.P99, want.P99) || !near(got.Max, want.Max) || !near(got.Min, want.Min) {
		t.Errorf("lag %+v; the rows' own (Go's Decompose against the stored clock_timestamp()) are %+v", got, want)
	}
	// The one-statement measurement: each run of each variant, and the
	// medians of those.
	if st := res.Statement; st == nil || st.Rows != 3000 || st.Runs != 3 || len(st.BigserialUs) != 3 || len(st.SnowflakeUs) != 3 ||
		slices.Min(st.BigserialUs) <= 0 || slices.Min(st.SnowflakeUs) <= 0 ||
		st.BigserialMedianUs != quantile(st.BigserialUs, 0.5) || st.SnowflakeMedianUs != quantile(st.SnowflakeUs, 0.5) {
		t.Errorf("statement measurement %+v", res.Statement)
	}
	if n := strings.Count(progress.String(), "statement "); n != 9 {
		t.Errorf("%d statement runs in the progress, want 9:\n%s", n, progress.String())
	}
	if strings.Count(progress.String(), "round ") != 6 {
		t.Errorf("progress:\n%s", progress.String())
	}
	var text bytes.Buffer
	res.WriteText(&text)
	if !strings.Contains(text.String(), "ratio snowflake_next_id/bigserial") || !strings.Contains(text.String(), "one INSERT ... SELECT of 3000 rows") {
		t.Errorf("report:\n%s", text.String())
	}
	if after := pgtest.Relations(t, conn); !slices.Equal(after, before) {
		t.Errorf("relations before the run %v, after it %v; want the scratch tables gone", before, after)
	}
}

// TestRunCleansUpWhenCancelled cancels a run in its first round: Run
// returns the context's error and still drops its scratch tables.
func TestRunCleansUpWhenCancelled(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "bench_ids"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), string(script)); err != nil {
		t.Fatal(err)
	}
	before := pgtest.Relations(t, conn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var during []string
	progress := writerFunc(func(b []byte) (int, error) {
		if strings.HasPrefix(string(b), "warming up") {
			during = pgtest.Relations(t, conn)
			cancel()
		}
		return len(b), nil
	})
	_, err = Run(ctx, Config{DSN: dsn, Schema: "bench_ids", Clients: 2, Duration: 2 * time.Second, Progress: progress})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run cancelled: %v; want context.Canceled", err)
	}
	if len(during) <= len(before) {
		t.Errorf("relations before the run %v, during it %v; want the scratch tables there", before, during)
	}
	if after := pgtest.Relations(t, conn); !slices.Equal(after, before) {
		t.Errorf("relations before the run %v, after it %v; want the scratch tables gone", before, after)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// lagProbe is a Config.Progress that, when Run says it is measuring the
// lag, reads the snowflake_next_id() scratch table itself and works out
// each row's lag in Go: the stored clock_timestamp() less the time that
// snowflake.Decompose finds in the ID, in milliseconds.
type lagProbe struct {
	t        *testing.T
	conn     *pgx.Conn
	schema   string
	progress *bytes.Buffer
	lags     []float64
}

func (p *lagProbe) Write(b []byte) (int, error) {
	p.progress.Write(b)
	if !strings.HasPrefix(string(b), "measuring the lag") {
		return len(b), nil
	}
	ctx := context.Background()
	var table string
	if err := p.conn.QueryRow(ctx, `SELECT pg_catalog.quote_ident(relname) FROM pg_catalog.pg_class
		WHERE relnamespace = $1::regnamespace AND relkind = 'r' AND relname LIKE 'sfgen\_bench\_%\_snowflake'`, p.schema).Scan(&table); err != nil {
		p.t.Errorf("find the snowflake scratch table: %v", err)
		return len(b), nil
	}
	rows, _ := p.conn.Query(ctx, "SELECT id, at FROM "+p.schema+"."+table)
	var id int64
	var at time.Time
	_, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error {
		parts, err := snowflake.Decompose(snowflake.ID(id))
		if err != nil {
			return err
		}
		p.lags = append(p.lags, float64(at.UnixMicro()-parts.Timestamp*1000)/1000)
		return nil
	})
	if err != nil {
		p.t.Errorf("read the snowflake scratch table: %v", err)
	}
	return len(b), nil
}

// near reports whether two lags in milliseconds agree to a nanosecond.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// benchDB is a fresh database with the latest release in schema bench_ids,
// and a connection to it, closed when the test ends.
func benchDB(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "bench_ids"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(script)); err != nil {
		t.Fatal(err)
	}
	return dsn, conn
}

// TestRunWithoutWalinspect: on a database without pg_walinspect the
// sequence WAL is n/a, and the report says why and what measures it.
func TestRunWithoutWalinspect(t *testing.T) {
	ctx := context.Background()
	dsn, _ := benchDB(t)
	res, err := Run(ctx, Config{DSN: dsn, Schema: "bench_ids", Clients: 1, Duration: 200 * time.Millisecond, Rounds: 1, Progress: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bigserial.SeqWALPerID != -1 || !strings.Contains(res.SeqWALNote, "no pg_walinspect extension") {
		t.Errorf("SeqWALPerID %v, SeqWALNote %q; want -1 and why", res.Bigserial.SeqWALPerID, res.SeqWALNote)
	}
	var text bytes.Buffer
	res.WriteText(&text)
	if !strings.Contains(text.String(), "\nseq WAL/ID n/a: this database has no pg_walinspect extension, which reads it (CREATE EXTENSION pg_walinspect") {
		t.Errorf("report:\n%s", text.String())
	}
}

// shapeProbe is a Progress writer that, at the first round's line, counts
// the scratch tables of schema with a note column and an index on at.
type shapeProbe struct {
	t              *testing.T
	conn           *pgx.Conn
	schema         string
	noted, indexed int
	seen           bool
}

func (p *shapeProbe) Write(b []byte) (int, error) {
	if !p.seen && bytes.HasPrefix(b, []byte("round 1/")) {
		p.seen = true
		if err := p.conn.QueryRow(context.Background(), `
			SELECT (SELECT pg_catalog.count(*) FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
			        WHERE c.relnamespace = $1::regnamespace AND c.relname LIKE 'sfgen_bench_%' AND a.attname = 'note'),
			       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indrelid
			        JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
			        WHERE c.relnamespace = $1::regnamespace AND c.relname LIKE 'sfgen_bench_%' AND a.attname = 'at' AND i.indnatts = 1)`,
			p.schema).Scan(&p.noted, &p.indexed); err != nil {
			p.t.Error(err)
		}
	}
	return len(b), nil
}

// TestRunRealistic: the realistic profile commits synchronously, gives
// every table a 100-byte note and an index on its time column, and
// reports each variant's primary key bytes per row, a uuid function's
// with a uuid id (issue 29).
func TestRunRealistic(t *testing.T) {
	ctx := context.Background()
	dsn, conn := benchDB(t)
	probe := &shapeProbe{t: t, conn: conn, schema: "bench_ids"}
	res, err := Run(ctx, Config{DSN: dsn, Schema: "bench_ids", Profile: ProfileRealistic, Clients: 2, Duration: 400 * time.Millisecond, Rounds: 2,
		StatementRows: 2000, StatementRuns: 1, Compare: []string{"pg_catalog.gen_random_uuid"}, Progress: probe})
	if err != nil {
		t.Fatal(err)
	}
	if res.Profile != ProfileRealistic || res.SynchronousCommit != "on" {
		t.Errorf("profile %q, synchronous_commit %q; want realistic, on", res.Profile, res.SynchronousCommit)
	}
	if probe.noted != 3 || probe.indexed != 3 {
		t.Errorf("%d of the 3 scratch tables have a note, %d an index on at; want all", probe.noted, probe.indexed)
	}
	if len(res.Compared) != 1 || res.Compared[0].Variant.IDType != "uuid" || res.Bigserial.IDType != "bigint" || res.Snowflake.IDType != "bigint" {
		t.Fatalf("id types: bigserial %q, snowflake %q, compared %+v", res.Bigserial.IDType, res.Snowflake.IDType, res.Compared)
	}
	uuid := res.Compared[0].Variant
	for _, v := range []Variant{res.Bigserial, res.Snowflake, uuid} {
		if v.TableRows < v.Rows || v.PKeyBytes <= 0 || v.PKeyBytesPerRow != float64(v.PKeyBytes)/float64(v.TableRows) {
			t.Errorf("%s: %d rows (%d in the rounds), primary key %d B, %.1f B/row", v.Name, v.TableRows, v.Rows, v.PKeyBytes, v.PKeyBytesPerRow)
		}
	}
	// A B-tree leaf tuple of a uuid is 8 bytes longer than a bigint's.
	if uuid.PKeyBytesPerRow <= res.Snowflake.PKeyBytesPerRow {
		t.Errorf("primary key bytes per row: uuid %.1f, snowflake %.1f; want the uuid's larger", uuid.PKeyBytesPerRow, res.Snowflake.PKeyBytesPerRow)
	}
	// The same of the one-statement tables, 2,000 rows each, and their
	// WAL: at least the rows' 100-byte notes.
	st := res.Statement
	if st == nil || len(st.Bytes) != 3 {
		t.Fatalf("statement %+v; want the bytes of 3 variants", st)
	}
	for i, name := range []string{"bigserial", "snowflake_next_id", "pg_catalog.gen_random_uuid()"} {
		if b := st.Bytes[i]; b.Name != name || b.PKeyBytesPerRow <= 0 || b.WALPerRow < 100 {
			t.Errorf("statement bytes %d: %+v; want %s's, pkey > 0, WAL >= 100 B a row", i, b, name)
		}
	}
	if st.Bytes[2].PKeyBytesPerRow <= st.Bytes[1].PKeyBytesPerRow {
		t.Errorf("one statement's primary key bytes per row: uuid %.1f, snowflake %.1f; want the uuid's larger", st.Bytes[2].PKeyBytesPerRow, st.Bytes[1].PKeyBytesPerRow)
	}
}
