package main

import (
	"encoding/json"
	snowflake "github.com/sfgen/sfgen"
	"slices"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/bench"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

func TestBenchOnADatabase(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 5, Machine: 6})
	conn, _ := testSchema(t, dsn)
	before := pgtest.Relations(t, conn)
	code, out, errOut := sfgen(t, "bench", "--dsn", dsn, "--schema", schema, "--clients", "2", "--duration", "400ms", "--statement-rows", "2000", "--statement-runs", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Clients != 2 || res.Bigserial.Rows == 0 || res.Snowflake.Rows == 0 || res.Ratio <= 0 || res.Node != [2]int{5, 6} {
		t.Errorf("report %+v", res)
	}
	// Each row's ID is made before its clock_timestamp() is read, and its
	// time is floored to the millisecond: every lag is at least 0, and of
	// thousands of rows some lag more than half a millisecond. The state
	// trails the clock by at most sqlgen.LagLimit, or a little more for a
	// call that waited sqlgen.CatchUpLockWait for the catch-up lock, so
	// the median row lags less than both together.
	slowest := float64((sqlgen.LagLimit + sqlgen.CatchUpLockWait).Milliseconds())
	if l := res.Lag; l.Rows < res.Snowflake.Rows || l.Min < 0 || l.P50 < l.Min || l.P99 < l.P50 || l.Max < l.P99 || l.Max < 0.5 || l.P50 > slowest {
		t.Errorf("lag %+v for %d rows; want every row, 0 <= min <= p50 <= p99 <= max, max at least 0.5 ms, p50 at most %v ms", l, res.Snowflake.Rows, slowest)
	}
	if st := res.Statement; st == nil || st.Rows != 2000 || len(st.BigserialUs) != 2 || len(st.SnowflakeUs) != 2 {
		t.Errorf("statement measurement %+v, want 2 runs of 2000 rows each", res.Statement)
	}
	if !strings.Contains(errOut, "round 1/") || !strings.Contains(errOut, "statement 2/2") {
		t.Errorf("no progress on stderr: %q", errOut)
	}
	if after := pgtest.Relations(t, conn); !slices.Equal(after, before) {
		t.Errorf("relations before bench %v, after it %v; want the scratch tables gone", before, after)
	}
}

func TestBenchThrowawayCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL")
	}
	withoutDatabase(t)
	code, out, errOut := sfgen(t, "bench", "--clients", "1", "--duration", "300ms", "--statement-rows", "0")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, w := range []string{"bigserial", "snowflake_next_id", "ratio", "lag", "seq WAL/ID"} {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "INSERT ... SELECT") || strings.Contains(errOut, "statement 1/") {
		t.Errorf("--statement-rows 0 still measured the statement:\n%s\n%s", out, errOut)
	}
	// The throwaway gets pg_walinspect, so both rows give the sequence WAL.
	for _, line := range strings.Split(out, "\n") {
		if (strings.HasPrefix(line, "bigserial ") || strings.HasPrefix(line, "snowflake_next_id ")) && strings.Contains(line, "n/a") {
			t.Errorf("no sequence WAL figure: %q", line)
		}
	}
	for _, w := range []string{"sfgen bench: no --dsn or DATABASE_URL; starting a throwaway PostgreSQL\n", "sfgen bench: installed ["} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q: %q", w, errOut)
		}
	}
}

func TestBenchErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--clients", "0"}, []string{"clients", "0", "[1, 1000]"}},
		{[]string{"--clients", "eight"}, []string{"clients", `"eight"`}},
		{[]string{"--duration", "1ms"}, []string{"duration", "1ms"}},
		{[]string{"--duration", "soon"}, []string{"duration"}},
		{[]string{"--schema", "a b"}, []string{"a b"}},
		{[]string{"--rounds", "601"}, []string{"rounds", "601", "[0, 600]"}},
		{[]string{"--rounds", "-1"}, []string{"rounds", "-1"}},
		{[]string{"--rounds", "many"}, []string{"rounds", `"many"`}},
		{[]string{"--duration", "1s", "--rounds", "20"}, []string{"1s", "20 rounds", "100ms"}},
		{[]string{"now"}, []string{"now"}},
		{[]string{"--statement-rows", "-1"}, []string{"statement-rows", "-1", "[0, 10000000]"}},
		{[]string{"--statement-rows", "10000001"}, []string{"statement-rows", "10000001"}},
		{[]string{"--statement-runs", "0"}, []string{"statement-runs", "0", "[1, 100]"}},
		{[]string{"--compare", "1x"}, []string{`compare function "1x"`, "starting with a digit", "want name or schema.name"}},
		{[]string{"--compare", "public.f;drop table t"}, []string{`"public.f;drop table t"`, "';' at byte 8"}},
		{[]string{"--compare", ""}, []string{`compare function ""`, "empty part"}},
		{[]string{"--compare", "a.b.c"}, []string{`"a.b.c"`, "3 dotted parts"}},
		{[]string{"--compare", `"unterminated`}, []string{`"\"unterminated"`, "unterminated quoted identifier"}},
		{[]string{"--compare", "a", "--compare", "b", "--compare", "c", "--compare", "d", "--compare", "e"}, []string{"5 compare functions", "at most 4"}},
		{[]string{"--compare", "s.F", "--compare", `s."f"`}, []string{`"s"."f"() twice`}},
	} {
		code, out, errOut := sfgen(t, append([]string{"bench"}, tc.args...)...)
		if code != 2 || out != "" {
			t.Errorf("bench %v: exit %d, stdout %q; want 2", tc.args, code, out)
		}
		oneLine(t, errOut)
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("bench %v: stderr %q does not name %s", tc.args, errOut, w)
			}
		}
	}
	if code, out, _ := sfgen(t, "bench", "--help"); code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--compare snowflake.nextval") ||
		!strings.Contains(out, "search_path is pg_catalog,\npg_temp") {
		t.Errorf("bench --help: %d\n%s", code, out)
	}
}
