package main

import (
	"context"
	"encoding/json"
	snowflake "github.com/sfgen/sfgen"
	"slices"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/bench"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// benchPeerSQL makes a peer's ID function the way pgEdge's
// snowflake.nextval(regclass DEFAULT ...) is called, with no arguments,
// over its own sequence; a function returning text; and one in public.
const benchPeerSQL = `
CREATE SCHEMA bench_peer;
CREATE SEQUENCE bench_peer.ids;
CREATE FUNCTION bench_peer.nextval(seq regclass DEFAULT 'bench_peer.ids') RETURNS bigint
	LANGUAGE sql VOLATILE AS $$SELECT pg_catalog.nextval(seq)$$;
CREATE FUNCTION bench_peer.text_id() RETURNS text LANGUAGE sql AS $$SELECT 'x'$$;
CREATE FUNCTION public.bench_pub_id() RETURNS bigint LANGUAGE sql AS $$SELECT 1::bigint$$;
`

// TestBenchCompare: bench --compare measures a peer's function beside
// bigserial and snowflake_next_id(), with its ratio and statement runs in
// the JSON and its lines in the text report; a function that is not there,
// not where the bench sessions look (search_path pg_catalog, pg_temp), or
// that cannot be a bigint DEFAULT fails with exit status 1, naming it.
func TestBenchCompare(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter()})
	conn, _ := testSchema(t, dsn)
	if _, err := conn.Exec(context.Background(), benchPeerSQL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP SCHEMA bench_peer CASCADE; DROP FUNCTION public.bench_pub_id()")
	})
	before := pgtest.Relations(t, conn)
	code, out, errOut := sfgen(t, "bench", "--dsn", dsn, "--schema", schema, "--compare", "bench_peer.nextval", "--clients", "2", "--duration", "300ms",
		"--statement-rows", "1000", "--statement-runs", "3", "--json")
	if code != 0 {
		t.Fatalf("bench --compare: exit %d, stderr %s", code, errOut)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Compared) != 1 {
		t.Fatalf("compared %+v, want bench_peer.nextval()", res.Compared)
	}
	c := res.Compared[0]
	if c.Variant.Name != "bench_peer.nextval()" || c.Default != `"bench_peer"."nextval"()` || c.Variant.Rows == 0 ||
		c.Ratio != c.Variant.TPS/res.Bigserial.TPS || len(c.RoundRatios) != res.Rounds || len(c.Variant.RoundTPS) != res.Rounds {
		t.Errorf("compared %+v; want rows, ratio %v, %d rounds", c, c.Variant.TPS/res.Bigserial.TPS, res.Rounds)
	}
	var last int64
	if err := conn.QueryRow(context.Background(), "SELECT last_value FROM bench_peer.ids").Scan(&last); err != nil {
		t.Fatal(err)
	}
	if last < c.Variant.Rows+3*1000 {
		t.Errorf("bench_peer.ids at %d, fewer than the rows of bench_peer.nextval(): %d and 3 statements of 1000", last, c.Variant.Rows)
	}
	if st := res.Statement; st == nil || len(st.Compared) != 1 || st.Compared[0].Name != "bench_peer.nextval()" || len(st.Compared[0].Us) != 3 || st.Compared[0].MedianUs <= 0 {
		t.Errorf("statement measurement %+v; want 3 runs of bench_peer.nextval()", res.Statement)
	}
	if n := strings.Count(errOut, " bench_peer.nextval() "); n != res.Rounds+3 {
		t.Errorf("%d progress lines of bench_peer.nextval(), want %d rounds and 3 statements:\n%s", n, res.Rounds, errOut)
	}

	// The text report names the function as written.
	code, out, errOut = sfgen(t, "bench", "--dsn", dsn, "--schema", schema, "--compare", `"bench_peer"."nextval"()`, "--clients", "1", "--duration", "200ms",
		"--statement-rows", "100", "--statement-runs", "1")
	if code != 0 || !strings.Contains(out, "\nratio \"bench_peer\".\"nextval\"()/bigserial: ") || !strings.Contains(out, "\n  and \"bench_peer\".\"nextval\"() ") {
		t.Errorf("bench --compare, text: exit %d\n%s\n%s", code, out, errOut)
	}

	for _, tc := range []struct {
		compare string
		want    []string
	}{
		{"bench_peer.missing", []string{"compare function bench_peer.missing() cannot be the DEFAULT of the id", "does not exist"}},
		{"bench_peer.text_id", []string{"compare function bench_peer.text_id() cannot be the DEFAULT of the id", "default expression is of type text"}},
		{"bench_pub_id", []string{"compare function bench_pub_id() cannot", "only in pg_catalog and pg_temp", "qualify it with its schema"}},
	} {
		code, out, errOut := sfgen(t, "bench", "--dsn", dsn, "--schema", schema, "--compare", tc.compare, "--clients", "1", "--duration", "200ms", "--statement-rows", "0")
		if code != 1 || out != "" {
			t.Errorf("bench --compare %s: exit %d, stdout %q, stderr %q; want 1", tc.compare, code, out, errOut)
		}
		oneLine(t, errOut)
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("bench --compare %s: stderr %q lacks %q", tc.compare, errOut, w)
			}
		}
	}
	if after := pgtest.Relations(t, conn); !slices.Equal(after, before) {
		t.Errorf("relations before bench %v, after it %v; want the scratch tables gone", before, after)
	}
}
