package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/bench"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestBenchNative: bench --native measures three variants, the native
// generator beside the SQL one, in rounds and statements, and says what
// is missing when the native one is not there.
func TestBenchNative(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := installSchema(t, dsn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 5, Machine: 6})
	code, out, errOut := sfgen(t, "bench", "--dsn", dsn, "--schema", schema, "--native", "--duration", "200ms")
	if code != 1 || out != "" || !strings.Contains(errOut, "schema "+schema+" has no native generator") || !strings.Contains(errOut, "sfgen install --native --schema "+schema) || strings.Contains(errOut, "InstallSideBySide") {
		t.Errorf("bench --native without the native generator = %d, %q, %q", code, out, errOut)
	}

	nativeHere(t)
	lib, err := native.Build(context.Background(), serverReadableDir(t), snowflake.Twitter())
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(context.Background())
	if err := native.InstallSideBySide(context.Background(), pc, schema, lib); err != nil {
		t.Fatal(err)
	}
	conn, _ := testSchema(t, dsn)
	before := pgtest.Relations(t, conn)
	code, out, errOut = sfgen(t, "bench", "--dsn", dsn, "--schema", schema, "--native", "--clients", "2", "--duration", "600ms",
		"--statement-rows", "2000", "--statement-runs", "3", "--json")
	if code != 0 {
		t.Fatalf("bench --native: exit %d, stderr %s", code, errOut)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Native == nil || res.Native.Name != "snowflake_next_id_native" || res.Native.Rows == 0 || res.NativeRatio <= 0 ||
		len(res.NativeRoundRatios) != res.Rounds || len(res.Native.RoundTPS) != res.Rounds {
		t.Errorf("native variant %+v, ratio %v, %d round ratios for %d rounds", res.Native, res.NativeRatio, len(res.NativeRoundRatios), res.Rounds)
	}
	if st := res.Statement; st == nil || len(st.NativeUs) != 3 || slices.Min(st.NativeUs) <= 0 || st.NativeMedianUs <= 0 {
		t.Errorf("statement measurement %+v; want 3 native runs", res.Statement)
	}
	if after := pgtest.Relations(t, conn); !slices.Equal(after, before) {
		t.Errorf("relations before bench %v, after it %v; want the scratch tables gone", before, after)
	}
}

// TestBenchInstalledNative: after sfgen install --native, sfgen bench
// --dsn measures the schema's snowflake_next_id(), the native generator,
// beside bigserial and the SQL generator (its release's body as the
// column default), with or without --native (issue 28, item 2).
func TestBenchInstalledNative(t *testing.T) {
	if testing.Short() {
		t.Skip("a bench run of three generators: long; run without -short")
	}
	nativeHere(t)
	dsn := pgtest.DSN(t)
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "3", "--machine", "4", "--native", "--native-dir", serverReadableDir(t)); code != 0 {
		t.Fatalf("install --native = %d, %q, %q", code, out, errOut)
	}
	for _, native := range []bool{false, true} {
		args := []string{"bench", "--dsn", dsn, "--schema", "ids", "--clients", "2", "--duration", "600ms", "--statement-rows", "2000", "--statement-runs", "3", "--json"}
		if native {
			args = append(args, "--native")
		}
		code, out, errOut := sfgen(t, args...)
		if code != 0 {
			t.Fatalf("bench (--native %v) on an installed native generator: exit %d, stderr %s", native, code, errOut)
		}
		var res bench.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if res.Snowflake.Name != "snowflake_next_id (SQL)" || res.Snowflake.Rows == 0 || res.Ratio <= 0 {
			t.Errorf("--native %v: SQL variant %+v, ratio %v", native, res.Snowflake, res.Ratio)
		}
		if res.Native == nil || res.Native.Name != "snowflake_next_id (native)" || res.Native.Rows == 0 || res.NativeRatio <= 0 {
			t.Errorf("--native %v: native variant %+v, ratio %v", native, res.Native, res.NativeRatio)
		}
		if st := res.Statement; st == nil || len(st.NativeUs) != 3 || len(st.SnowflakeUs) != 3 {
			t.Errorf("--native %v: statement measurement %+v; want 3 runs of each", native, res.Statement)
		}
		if res.Node != [2]int{3, 4} {
			t.Errorf("--native %v: node %v, want 3/4", native, res.Node)
		}
	}
}
