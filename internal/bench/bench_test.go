package bench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestRun measures on a fresh database with pg_walinspect, and checks that
// the report holds both variants, the sequence WAL split and the lag.
func TestRun(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	script, err := sqlgen.Script(sqlgen.Options{Schema: "bench_ids"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(script)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		t.Skipf("no pg_walinspect: %v", err)
	}
	var progress bytes.Buffer
	res, err := Run(ctx, Config{DSN: dsn, Schema: "bench_ids", Clients: 3, Duration: 600 * time.Millisecond, Rounds: 2, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []Variant{res.Bigserial, res.Snowflake} {
		if v.Rows == 0 || v.TPS <= 0 || len(v.RoundTPS) != 2 || v.WALPerRow <= 0 || v.SeqWALPerID < 0 {
			t.Errorf("%s: %+v", v.Name, v)
		}
	}
	if len(res.RoundRatios) != 2 || res.RoundRatios[0] <= 0 {
		t.Errorf("round ratios %v, want one per round", res.RoundRatios)
	}
	if res.Lag.Rows < res.Snowflake.Rows || res.Lag.P50 < 0 || res.Lag.P99 < res.Lag.P50 {
		t.Errorf("lag %+v", res.Lag)
	}
	if strings.Count(progress.String(), "round ") != 4 {
		t.Errorf("progress:\n%s", progress.String())
	}
	var text bytes.Buffer
	res.WriteText(&text)
	if !strings.Contains(text.String(), "ratio snowflake_next_id/bigserial") {
		t.Errorf("report:\n%s", text.String())
	}
	var left int
	conn.QueryRow(ctx, "SELECT count(*) FROM pg_class WHERE relname LIKE 'sfgen\\_bench\\_%'").Scan(&left)
	if left != 0 {
		t.Errorf("%d scratch relations left", left)
	}
}
