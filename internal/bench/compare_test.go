package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	snowflake "github.com/sfgen/sfgen"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// peerSQL makes the functions the compare tests measure: peer.next_id(),
// a LANGUAGE sql function over its own sequence with a defaulted argument
// as pgEdge's snowflake.nextval(regclass DEFAULT ...) has, one of a quoted
// name in a quoted schema returning integer, and some that cannot be a
// bigint DEFAULT or fail when called.
const peerSQL = `
CREATE SCHEMA peer;
CREATE SEQUENCE peer.ids;
CREATE FUNCTION peer.next_id(seq regclass DEFAULT 'peer.ids') RETURNS bigint
	LANGUAGE sql VOLATILE AS $$SELECT pg_catalog.nextval(seq)$$;
CREATE SCHEMA "Peer";
CREATE SEQUENCE "Peer".ids;
CREATE FUNCTION "Peer"."Next ID"() RETURNS integer
	LANGUAGE sql VOLATILE AS $$SELECT pg_catalog.nextval('"Peer".ids')::integer$$;
CREATE FUNCTION peer.text_id() RETURNS text LANGUAGE sql AS $$SELECT 'x'$$;
CREATE FUNCTION peer.needs_arg(n bigint) RETURNS bigint LANGUAGE sql AS $$SELECT n$$;
CREATE FUNCTION peer.fails() RETURNS bigint LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'peer fails on purpose'; END$$;
CREATE FUNCTION public.pub_id() RETURNS bigint LANGUAGE sql AS $$SELECT 1::bigint$$;
`

// peerDatabase returns a fresh database with sfgen in bench_ids and the
// functions of peerSQL, and a connection to it.
func peerDatabase(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "bench_ids"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(script)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, peerSQL); err != nil {
		t.Fatal(err)
	}
	return dsn, conn
}

// TestRunCompare measures two compared functions beside bigserial and
// snowflake_next_id(): each is a variant with its rows (every one of them
// an ID from its own sequence), its ratio to bigserial, round by round,
// and its statement runs, and the rounds put the four variants in every
// place alike.
func TestRunCompare(t *testing.T) {
	dsn, conn := peerDatabase(t)
	ctx := context.Background()
	before := pgtest.Relations(t, conn)
	var progress bytes.Buffer
	const rounds, runs, rows = 4, 4, 1000
	res, err := Run(ctx, Config{DSN: dsn, Schema: "bench_ids", Clients: 2, Duration: 400 * time.Millisecond, Rounds: rounds,
		StatementRows: rows, StatementRuns: runs, Compare: []string{"peer.next_id", `"Peer"."Next ID"()`}, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"bigserial", "snowflake_next_id", "peer.next_id()", `"Peer"."Next ID"()`}
	if len(res.Compared) != 2 {
		t.Fatalf("compared %+v, want 2", res.Compared)
	}
	for i, c := range res.Compared {
		v := c.Variant
		if v.Name != names[2+i] || v.Rows == 0 || len(v.RoundTPS) != rounds || v.WALPerRow <= 0 {
			t.Errorf("compared variant %+v, want %s with rows in %d rounds", v, names[2+i], rounds)
		}
		if c.Ratio != v.TPS/res.Bigserial.TPS || len(c.RoundRatios) != rounds {
			t.Errorf("%s: ratio %v, round ratios %v; want %v and one per round", v.Name, c.Ratio, c.RoundRatios, v.TPS/res.Bigserial.TPS)
		}
		for r := range c.RoundRatios {
			if c.RoundRatios[r] != v.RoundTPS[r]/res.Bigserial.RoundTPS[r] {
				t.Errorf("%s: round %d ratio %v, want %v", v.Name, r+1, c.RoundRatios[r], v.RoundTPS[r]/res.Bigserial.RoundTPS[r])
			}
		}
	}
	if got := []string{res.Compared[0].Default, res.Compared[1].Default}; !slices.Equal(got, []string{`"peer"."next_id"()`, `"Peer"."Next ID"()`}) {
		t.Errorf("defaults %q", got)
	}
	// Each row took an ID from the function's own sequence: the measured
	// rows and the statements' (warm-up rows come on top).
	for i, seq := range []string{"peer.ids", `"Peer".ids`} {
		var last int64
		if err := conn.QueryRow(ctx, "SELECT last_value FROM "+seq).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if want := res.Compared[i].Variant.Rows + runs*rows; last < want {
			t.Errorf("%s at %d; want at least %d, the rows of %s", seq, last, want, names[2+i])
		}
	}
	// Every round runs each variant once, and over the 4 rounds each
	// variant is in every place once.
	var order [][]string
	roundLine := regexp.MustCompile(`^round (\d+)/\d+ (.+?) +\d+ tps`)
	for _, line := range strings.Split(progress.String(), "\n") {
		if m := roundLine.FindStringSubmatch(line); m != nil {
			r, _ := strconv.Atoi(m[1])
			if r > len(order) {
				order = append(order, nil)
			}
			order[r-1] = append(order[r-1], m[2])
		}
	}
	if len(order) != rounds {
		t.Fatalf("%d rounds in the progress, want %d:\n%s", len(order), rounds, progress.String())
	}
	for place := range names {
		var in []string
		for _, o := range order {
			if !slices.Equal(slices.Sorted(slices.Values(o)), slices.Sorted(slices.Values(names))) {
				t.Fatalf("a round ran %v, want each of %v once", o, names)
			}
			in = append(in, o[place])
		}
		if !slices.Equal(slices.Sorted(slices.Values(in)), slices.Sorted(slices.Values(names))) {
			t.Errorf("place %d of the rounds held %v; want each variant once (rounds %v)", place+1, in, order)
		}
	}
	// The statement runs of each compared function, their median, and the
	// median of their differences from bigserial's.
	st := res.Statement
	if st == nil || len(st.Compared) != 2 || len(st.BigserialUs) != runs || len(st.SnowflakeUs) != runs {
		t.Fatalf("statement measurement %+v", st)
	}
	for i, c := range st.Compared {
		diffs := make([]float64, len(c.Us))
		for r := range c.Us {
			diffs[r] = c.Us[r] - st.BigserialUs[r]
		}
		if c.Name != names[2+i] || len(c.Us) != runs || slices.Min(c.Us) <= 0 || c.MedianUs != quantile(c.Us, 0.5) || c.ExtraMedianUs != quantile(diffs, 0.5) {
			t.Errorf("statement of %s: %+v", names[2+i], c)
		}
		if n := strings.Count(progress.String(), fmt.Sprintf("statement %d/%d %s ", runs, runs, c.Name)); n != 1 {
			t.Errorf("%d last statement runs of %s in the progress, want 1", n, c.Name)
		}
	}
	if n := strings.Count(progress.String(), "statement "); n != runs*len(names) {
		t.Errorf("%d statement runs in the progress, want %d", n, runs*len(names))
	}
	var text bytes.Buffer
	res.WriteText(&text)
	for _, w := range []string{"ratio peer.next_id()/bigserial: ", `ratio "Peer"."Next ID"()/bigserial: `, "\n  and peer.next_id() ", "\npeer.next_id() "} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, text.String())
		}
	}
	if after := pgtest.Relations(t, conn); !slices.Equal(after, before) {
		t.Errorf("relations before the run %v, after it %v; want the scratch tables gone", before, after)
	}
}

// TestRunCompareErrors: a compared function that is not there (or not
// where the bench sessions look: their search_path is pg_catalog,
// pg_temp), takes an argument, or returns what a bigint column cannot
// default to is a *CompareError naming it, with PostgreSQL's error; one
// that fails when called is an error naming it; and the scratch tables
// are gone either way.
func TestRunCompareErrors(t *testing.T) {
	dsn, conn := peerDatabase(t)
	before := pgtest.Relations(t, conn)
	for _, tc := range []struct {
		compare  string
		code     string // PostgreSQL's SQLSTATE
		unusable bool   // a *CompareError
		qualify  bool   // the hint to qualify the name
		want     string
	}{
		{"peer.missing", "42883", true, false, "compare function peer.missing() cannot be the DEFAULT of the id"},
		{"pub_id", "42883", true, true, "compare function pub_id() cannot be the DEFAULT of the id"},
		{"peer.text_id", "42804", true, false, "compare function peer.text_id() cannot be the DEFAULT of the id"},
		{"peer.needs_arg", "42883", true, false, "compare function peer.needs_arg()"},
		{"peer.fails", "P0001", false, false, "inserts with peer.fails(): "},
	} {
		_, err := Run(context.Background(), Config{DSN: dsn, Schema: "bench_ids", Clients: 1, Duration: 200 * time.Millisecond,
			StatementRows: 10, StatementRuns: 1, Compare: []string{tc.compare}})
		var pe *pgconn.PgError
		var ce *CompareError
		if err == nil || !errors.As(err, &pe) || pe.Code != tc.code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("compare %s: %v; want SQLSTATE %s and %q", tc.compare, err, tc.code, tc.want)
			continue
		}
		if errors.Is(err, ErrCompareUnusable) != tc.unusable || errors.As(err, &ce) != tc.unusable {
			t.Errorf("compare %s: %v; a *CompareError: %v, want %v", tc.compare, err, ce != nil, tc.unusable)
		}
		if q := strings.Contains(err.Error(), "qualify it with its schema"); q != tc.qualify {
			t.Errorf("compare %s: %v; the hint to qualify it: %v, want %v", tc.compare, err, q, tc.qualify)
		}
	}
	// public.pub_id is there, and callable qualified.
	if _, err := Run(context.Background(), Config{DSN: dsn, Schema: "bench_ids", Clients: 1, Duration: 200 * time.Millisecond,
		StatementRows: -1, Compare: []string{"public.pub_id"}}); err == nil || !strings.Contains(err.Error(), "duplicate key") {
		// It returns 1 every time: the second row breaks the primary key,
		// which shows the function was found and called.
		t.Errorf("compare public.pub_id: %v; want a duplicate key", err)
	}
	// An unqualified name is found in pg_catalog: txid_current() gives
	// each single-row INSERT, its own transaction, its own ID.
	res, err := Run(context.Background(), Config{DSN: dsn, Schema: "bench_ids", Clients: 1, Duration: 200 * time.Millisecond,
		StatementRows: -1, Compare: []string{"txid_current"}})
	if err != nil || len(res.Compared) != 1 || res.Compared[0].Variant.Rows == 0 {
		t.Errorf("compare txid_current: %+v, %v; want rows", res, err)
	}
	if after := pgtest.Relations(t, conn); !slices.Equal(after, before) {
		t.Errorf("relations before the runs %v, after them %v; want the scratch tables gone", before, after)
	}
}

// TestCompareJSON: the JSON of a result keeps the fields it had before
// Config.Compare, and writes the compared variants under "compared", in
// the result and in its statement; without them, there is no "compared".
func TestCompareJSON(t *testing.T) {
	r := Result{Bigserial: Variant{Name: "bigserial"}, Snowflake: Variant{Name: "snowflake_next_id"}, Ratio: 0.9,
		Statement: &Statement{Rows: 10, Runs: 1}}
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), "compared") {
		t.Errorf("no compared functions, yet: %s", b)
	}
	r.Compared = []Compared{{Variant: Variant{Name: "snowflake.nextval()", Rows: 5}, Default: `"snowflake"."nextval"()`, Ratio: 0.8, RoundRatios: []float64{0.7, 0.9}}}
	r.Statement.Compared = []ComparedStatement{{Name: "snowflake.nextval()", Us: []float64{2}, MedianUs: 2, ExtraMedianUs: 0.5}}
	b, _ = json.Marshal(r)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"clients", "rounds", "round_seconds", "profile", "synchronous_commit", "server_version", "node", "bigserial", "snowflake_next_id", "ratio", "round_ratios", "lag", "statement"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	want := `{"variant":{"name":"snowflake.nextval()","rows":5,"seconds":0,"tps":0,"round_tps":null,"wal_bytes":0,"wal_per_row":0,"seq_wal_per_id":0,"id_type":"","table_rows":0,"pkey_bytes":0,"pkey_bytes_per_row":0},"default":"\"snowflake\".\"nextval\"()","ratio":0.8,"round_ratios":[0.7,0.9]}`
	if got, _ := json.Marshal(m["compared"].([]any)[0]); !jsonEqual(t, got, want) {
		t.Errorf("compared as JSON %s, want %s", got, want)
	}
	st := m["statement"].(map[string]any)
	want = `{"name":"snowflake.nextval()","us_per_row":[2],"median_us":2,"extra_median_us":0.5}`
	if got, _ := json.Marshal(st["compared"].([]any)[0]); !jsonEqual(t, got, want) {
		t.Errorf("statement's compared as JSON %s, want %s", got, want)
	}
}

func jsonEqual(t *testing.T, a []byte, b string) bool {
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}
