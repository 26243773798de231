package verify

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "seed of the random inputs (default $SFGEN_SEED, else random)")
	countFlag = flag.Int("count-inputs", 100_000, "random inputs the differential test checks")
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var schemaSeq atomic.Int64

// database returns a pool on a test database and a schema of the test's
// own, dropped at the end: with $DATABASE_URL several tests and packages
// share one database.
func database(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("sfgen_verify_%d_%d", os.Getpid(), schemaSeq.Add(1))
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		pool.Close()
	})
	return pool, schema
}

// installInto installs sfgen with goose, as `sfgen install` does.
func installInto(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	db, err := sql.Open("pgx", pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := install.Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); err != nil {
		t.Fatal(err)
	}
}

func seed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		if env := os.Getenv("SFGEN_SEED"); env != "" {
			var err error
			if s, err = strconv.ParseUint(env, 10, 64); err != nil {
				t.Fatalf("SFGEN_SEED=%q: %v", env, err)
			}
		} else {
			s = rand.Uint64()
		}
	}
	t.Logf("seed %d (reproduce with SFGEN_SEED=%d or -seed %d)", s, s, s)
	return s
}

// TestDatabaseAgreesWithGo is the differential suite: seeded random inputs
// (at least 100,000) and the fixed vectors, checked on both sides.
func TestDatabaseAgreesWithGo(t *testing.T) {
	pool, schema := database(t)
	installInto(t, pool, schema)
	rep, err := Run(context.Background(), pool, Options{Schema: schema, Count: *countFlag, Seed: seed(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d vectors, %d random inputs (%d valid, %d rejected), %d fixed and %d random times at %.0f inputs/s",
		rep.Vectors, rep.Checked, rep.Valid, rep.Rejected, rep.TimeVectors, rep.Times, rep.PerSecond)
	times := 0 // one for every ten inputs of each batch
	for done := 0; done < *countFlag; done += 8192 {
		times += min(8192, *countFlag-done) / timesPerInput
	}
	if rep.Checked != *countFlag || rep.Valid == 0 || rep.Rejected == 0 || rep.Vectors == 0 ||
		rep.TimeVectors != len(TimeVectors(snowflake.Twitter())) || rep.Times != times || rep.Strings < 2*rep.Checked {
		t.Errorf("report %+v does not cover the inputs asked for (want %d random times)", rep, times)
	}
	if !rep.OK() {
		for _, m := range rep.Examples {
			t.Errorf("mismatch: %s", m)
		}
		t.Fatalf("%d mismatches (seed %d)", rep.Mismatches, rep.Seed)
	}
}

// TestVectorsInDatabase checks the database against testdata/vectors.json
// directly, independently of Run.
func TestVectorsInDatabase(t *testing.T) {
	pool, schema := database(t)
	installInto(t, pool, schema)
	ctx := context.Background()
	for _, v := range loadVectors(t) {
		in := v.Input
		var id int64
		err := pool.QueryRow(ctx, "SELECT "+schema+".snowflake_compose($1, $2, $3, $4)", in.Timestamp, in.Datacenter, in.Machine, in.Sequence).Scan(&id)
		if v.ID == nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "22003" || pgErr.Message != v.Error {
				t.Errorf("%s: database answered %d, %v; want SQLSTATE 22003 %q", v.Name, id, err, v.Error)
			}
			continue
		}
		if err != nil || id != int64(*v.ID) {
			t.Errorf("%s: database answered %d, %v; want %d", v.Name, id, err, *v.ID)
			continue
		}
		var ts, dc, m, seq int64
		if err := pool.QueryRow(ctx, "SELECT timestamp_ms, datacenter_id, machine_id, sequence_id FROM "+schema+".snowflake_decompose($1)", id).Scan(&ts, &dc, &m, &seq); err != nil {
			t.Fatal(err)
		}
		if (Input{ts, int32(dc), int32(m), int32(seq)}) != in {
			t.Errorf("%s: snowflake_decompose(%d) = %d %d %d %d, want %+v", v.Name, id, ts, dc, m, seq, in)
		}
	}
}

// TestDetectsBrokenSQL installs deliberately broken functions and expects
// Run to report each break with its input, both answers and the seed.
func TestDetectsBrokenSQL(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		check          string // a word every reported mismatch has
	}{
		{"datacenter shifted one bit short", "datacenter_id::bigint OPERATOR(pg_catalog.<<) 17", "datacenter_id::bigint OPERATOR(pg_catalog.<<) 16", "snowflake_compose"},
		{"machine limit one too high", "machine_id OPERATOR(pg_catalog.>) 31", "machine_id OPERATOR(pg_catalog.>) 32", "snowflake_compose"},
		{"timestamp decoded from the wrong epoch", "(id OPERATOR(pg_catalog.>>) 22) OPERATOR(pg_catalog.+) 1288834974657;", "(id OPERATOR(pg_catalog.>>) 22) OPERATOR(pg_catalog.+) 1288834974658;", "snowflake_decompose"},
		{"error names the wrong field", "'sequence %s out of range [0, 4095]'", "'seq %s out of range [0, 4095]'", "snowflake_compose"},
		{"first_id rounds down", "ms := pg_catalog.ceil(", "ms := pg_catalog.floor(", "snowflake_first_id"},
		{"last_id without the node and sequence bits", " OPERATOR(pg_catalog.|) 4194303;", ";", "snowflake_last_id"},
		{"first_id's limit one too high", "IF ms OPERATOR(pg_catalog.>) 3487858230208 THEN", "IF ms OPERATOR(pg_catalog.>) 3487858230209 THEN", "snowflake_first_id"},
		{"last_id's limit one too low", "IF ms OPERATOR(pg_catalog.<) 1288834974657 THEN", "IF ms OPERATOR(pg_catalog.<) 1288834974656 THEN", "snowflake_last_id"},
		{"last_id's largest ID one short", "RETURN 9223372036854775807;", "RETURN 9223372036854775806;", "snowflake_last_id"},
		// The string forms (release 8).
		{"base32 digits out of order", "'0123456789ABCDEFGHJKMNPQRSTVWXYZ'", "'0123456789ABCDEFGHJKMNPQRSTVWXZY'", "snowflake_format"},
		{"base32 reads o as something else", "'abcdefghjkmnpqrstvwxyziloILO'", "'abcdefghjkmnpqrstvwxyzilxILO'", "snowflake_parse"},
		{"base58 takes a leading zero digit", "len OPERATOR(pg_catalog.>) 1 AND pg_catalog.substr(s, 1, 1)", "len OPERATOR(pg_catalog.>) 2 AND pg_catalog.substr(s, 1, 1)", "snowflake_parse"},
		{"base58 overflow bound off by one", "IF id OPERATOR(pg_catalog.>) ((9223372036854775807", "IF id OPERATOR(pg_catalog.>) ((9223372036854775806", "snowflake_parse"},
		{"a long input quoted whole", "IF len OPERATOR(pg_catalog.>) 32 THEN", "IF len OPERATOR(pg_catalog.>) 320 THEN", "snowflake_parse"},
		{"the input quoted for the bad character", "src := bad;", "src := s;", "snowflake_parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, schema := database(t)
			script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(script), tc.from) {
				t.Fatalf("script has no %q to break", tc.from)
			}
			broken := strings.Replace(string(script), tc.from, tc.to, 1)
			if _, err := pool.Exec(context.Background(), broken); err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), pool, Options{Schema: schema, Count: 20_000, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || len(rep.Examples) == 0 {
				t.Fatalf("Run found no mismatch in broken SQL: %+v", rep)
			}
			m := rep.Examples[0]
			if !strings.Contains(m.Check, tc.check) || m.Go == m.DB || m.Go == "" || m.DB == "" || m.Seed != 1 {
				t.Errorf("mismatch report %+v lacks the call, both answers or the seed", m)
			}
			t.Logf("%d mismatches; first: %s", rep.Mismatches, m)
		})
	}
}

func TestNotInstalledOrOtherLayout(t *testing.T) {
	pool, schema := database(t)
	ctx := context.Background()
	if _, err := Run(ctx, pool, Options{Schema: schema, Count: 10}); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Run on an empty schema: %v, want ErrNotInstalled", err)
	}
	installInto(t, pool, schema)
	other, err := snowflake.NewLayout(0, 43, 4, 4, 12)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, pool, Options{Schema: schema, Layout: other, Count: 10}); !errors.Is(err, ErrLayoutMismatch) {
		t.Errorf("Run with another layout: %v, want ErrLayoutMismatch", err)
	}
	if _, err := Run(ctx, pool, Options{Schema: "x;y", Count: 10}); !errors.Is(err, pgident.ErrInvalidSchema) {
		t.Errorf("Run with a bad schema: %v, want ErrInvalidSchema", err)
	}
}

// BenchmarkRun measures the differential check's throughput.
func BenchmarkRun(b *testing.B) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	defer pool.Exec(ctx, "DROP SCHEMA IF EXISTS sfgen_verify_bench CASCADE")
	db, _ := sql.Open("pgx", pool.Config().ConnString())
	if _, err := install.Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "sfgen_verify_bench"}); err != nil {
		b.Fatal(err)
	}
	db.Close()
	b.ResetTimer()
	rep, err := Run(ctx, pool, Options{Schema: "sfgen_verify_bench", Count: b.N, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	if !rep.OK() {
		b.Fatalf("%d mismatches", rep.Mismatches)
	}
	b.ReportMetric(rep.PerSecond, "inputs/s")
}

// TestGeneratorCheck runs the generator check on a healthy install, on
// one whose snowflake_next_id() is replaced by a broken one, and on one
// without it.
func TestGeneratorCheck(t *testing.T) {
	pool, schema := database(t)
	installInto(t, pool, schema)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "SELECT "+schema+".snowflake_set_node(3, 4)"); err != nil {
		t.Fatal(err)
	}
	rep, err := CheckGenerator(ctx, pool, schema, snowflake.Twitter(), 4, 2500, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.IDs != 10000 || rep.Datacenter != 3 || rep.Machine != 4 || rep.Skipped != "" {
		t.Fatalf("healthy generator: %+v", rep)
	}

	// A generator that ignores the node and stamps every ID of a
	// millisecond alike.
	if _, err := pool.Exec(ctx, `CREATE OR REPLACE FUNCTION `+schema+`.snowflake_next_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
		SELECT `+schema+`.snowflake_compose(pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint, 0, 0, 0) $$`); err != nil {
		t.Fatal(err)
	}
	rep, err = CheckGenerator(ctx, pool, schema, snowflake.Twitter(), 4, 2500, 5)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Duplicates == 0 || rep.OutOfOrder == 0 || rep.WrongNode != rep.IDs || len(rep.Examples) == 0 {
		t.Errorf("broken generator passed or was misreported: %+v", rep)
	}

	// A generator dated an hour ahead.
	if _, err := pool.Exec(ctx, `CREATE OR REPLACE FUNCTION `+schema+`.snowflake_next_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
		SELECT pg_catalog.nextval('`+schema+`.snowflake_state') + `+schema+`.snowflake_compose(pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint + 3600000, 3, 4, 0) $$`); err != nil {
		t.Fatal(err)
	}
	rep, err = CheckGenerator(ctx, pool, schema, snowflake.Twitter(), 2, 100, 5)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OutsideRun == 0 {
		t.Errorf("IDs dated an hour ahead passed: %+v", rep)
	}

	if _, err := pool.Exec(ctx, "DROP FUNCTION "+schema+".snowflake_next_id()"); err != nil {
		t.Fatal(err)
	}
	rep, err = CheckGenerator(ctx, pool, schema, snowflake.Twitter(), 4, 2500, 5)
	if err != nil || rep.Skipped == "" || !rep.OK() {
		t.Errorf("without snowflake_next_id(): %+v, %v; want skipped", rep, err)
	}
}
