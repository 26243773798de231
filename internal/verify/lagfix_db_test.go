package verify

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// TestCatchUpByNextvalKeepsTheLag shows release 5's catch-up on a server
// with max_connections 500, in a layout with 1 sequence bit: with the
// state left behind the clock by fewer values than the backend bound
// (529) and the last catch-up long ago, as after a pause, 4 connections
// drawing IDs at once get none dated more than maxLagMS before the draw,
// because the catch-up takes the values up to the clock with nextval().
// Release 4, whose catch-up then left the state where it was, dates some
// of them up to LagBoundMS back in about half of such draws (logged, not
// judged: it depends on which session takes the first catch-up); with
// release 5's loop taken out, this test fails in all but about one run in
// thirty (five draws, each passing about half the time).
func TestCatchUpByNextvalKeepsTheLag(t *testing.T) {
	ctx := context.Background()
	l, err := snowflake.NewLayout(0, 44, 17, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	bits := l.Bits(snowflake.FieldSequence)
	c := pgtest.Server(t, pgcluster.WithSetting("max_connections", "500"))
	pool, err := pgxpool.New(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	backends := serverBackends(t, pool)
	for _, tc := range []struct {
		schema  string
		release int
		dc      int64 // a node of its own: release 4 refuses one another schema holds
		changed bool
	}{{"release4", 4, 1, false}, {"latest", sqlgen.Latest, 2, true}} {
		t.Run(tc.schema, func(t *testing.T) {
			script, err := released.Script(sqlgen.Options{Layout: l, Schema: tc.schema, Datacenter: tc.dc, Machine: 1}, tc.release)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, string(script)); err != nil {
				t.Fatal(err)
			}
			// Four connections open, so that the draws start together.
			var conns []*pgxpool.Conn
			for range 4 {
				conn, err := pool.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, conn)
			}
			for _, conn := range conns {
				conn.Release()
			}
			// Whether a draw meets the lag depends on which session takes
			// the first catch-up: release 4 shows it in about half the
			// rounds here, so each variant gets five.
			for round := range 5 {
				// The state backends/2 - 30 ms behind the clock (2 values
				// a millisecond: fewer values than the bound, with 30 ms
				// for the clock to move on), the last catch-up long ago.
				behind := backends/2 - 30
				now := dbNowMs(t, pool)
				if _, err := pool.Exec(ctx, fmt.Sprintf("SELECT pg_catalog.setval('%[1]s.snowflake_state'::pg_catalog.regclass, $1::pg_catalog.int8), pg_catalog.setval('%[1]s.%[2]s'::pg_catalog.regclass, 1)", tc.schema, catalog.CatchUpGuard(tc.release)), (now-behind)<<bits); err != nil {
					t.Fatal(err)
				}
				start := dbNowMs(t, pool)
				streams, err := drawIDs(ctx, pool, tc.schema, 4, 2000)
				if err != nil {
					t.Fatal(err)
				}
				lag, late := int64(0), 0
				for _, ids := range streams {
					for _, id := range ids {
						p, err := l.Decompose(snowflake.ID(id))
						if err != nil {
							t.Fatal(err)
						}
						if d := start - p.Timestamp; d > maxLagMS {
							late++
							lag = max(lag, d)
						}
					}
				}
				if !tc.changed && late > 0 {
					t.Logf("release 4, round %d: %d of 8000 IDs dated more than %d ms before the draw, up to %d ms (bound %d)", round, late, maxLagMS, lag, LagBoundMS(backends, bits))
					return
				}
				if tc.changed && late > 0 {
					t.Fatalf("release %d, round %d: %d of 8000 IDs dated more than %d ms before the draw, up to %d ms", tc.release, round, late, maxLagMS, lag)
				}
			}
			if !tc.changed {
				t.Logf("release 4: no ID dated more than %d ms before the draw in 5 rounds", maxLagMS)
			}
		})
	}
}
