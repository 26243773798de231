package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/bench"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

func TestBenchOnADatabase(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Datacenter: 5, Machine: 6})
	code, out, errOut := sfgen(t, "bench", "--dsn", dsn, "--schema", schema, "--clients", "2", "--duration", "400ms", "--json")
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
	if res.Lag.Rows < res.Snowflake.Rows || res.Lag.Min < 0 && res.Lag.Max > 1000 {
		t.Errorf("lag %+v for %d rows", res.Lag, res.Snowflake.Rows)
	}
	if !strings.Contains(errOut, "round 1/") {
		t.Errorf("no progress on stderr: %q", errOut)
	}
	conn, _ := testSchema(t, dsn)
	var left int
	conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_class WHERE relname LIKE 'sfgen\\_bench\\_%'").Scan(&left)
	if left != 0 {
		t.Errorf("%d scratch relations left behind", left)
	}
}

func TestBenchThrowawayCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL")
	}
	t.Setenv("DATABASE_URL", "")
	code, out, errOut := sfgen(t, "bench", "--clients", "1", "--duration", "300ms")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, w := range []string{"bigserial", "snowflake_next_id", "ratio", "lag", "seq WAL/ID"} {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(errOut, "throwaway") {
		t.Errorf("stderr does not say it starts a throwaway cluster: %q", errOut)
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
	if code, out, _ := sfgen(t, "bench", "--help"); code != 0 || !strings.Contains(out, "Examples:") {
		t.Errorf("bench --help: %d\n%s", code, out)
	}
}
