package verify

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// TestLagBoundAtMaxConnections: on servers started with max_connections
// 100 and 500, verify's check, run three times after a fresh install of
// a layout with 1 sequence bit, passes: there the catch-up, which moves
// the state only when the clock is more than the backend bound in values
// past it, lets snowflake_next_id() date IDs up to LagBoundMS behind the
// clock, which at 500 connections is more than a hundred milliseconds
// (with maxLagMS alone the check fails there, as TestLayouts did at 200
// and 500). The backend bound is checked against PostgreSQL's defaults (3
// autovacuum workers, 8 worker processes, 10 WAL senders).
func TestLagBoundAtMaxConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("two servers of their own, at 100 and 500 connections: long; run without -short")
	}
	l, err := snowflake.NewLayout(0, 44, 17, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{100, 500} {
		t.Run("max_connections="+strconv.FormatInt(n, 10), func(t *testing.T) {
			ctx := context.Background()
			c := pgtest.Server(t, pgcluster.WithSetting("max_connections", strconv.FormatInt(n, 10)))
			pool, err := pgxpool.New(ctx, c.DSN())
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			const schema = "lag"
			installLayout(t, pool, l, schema, 1, 1)
			backends := serverBackends(t, pool)
			if want := n + 3 + 8 + 10 + 8; backends != want {
				t.Fatalf("backend bound %d at max_connections %d; want %d", backends, n, want)
			}
			bound := LagBoundMS(backends, 1)
			for i := range 3 {
				rep, err := Run(ctx, pool, Options{Layout: l, Schema: schema, Count: 20_000, Seed: uint64(i + 1), GeneratorIDs: 2000})
				if err != nil {
					t.Fatal(err)
				}
				if g := rep.Generator; !rep.OK() || g == nil || g.Backends != backends || g.LagBoundMS != bound || g.IDs != 8000 {
					if g != nil {
						for _, x := range g.Examples {
							t.Errorf("generator: %s", x)
						}
					}
					t.Fatalf("verify, run %d: ok %v, generator %+v; want ok with backends %d, lag bound %d ms", i, rep.OK(), g, backends, bound)
				}
			}
		})
	}
}

// TestLagBoundMS: the bound as the formula, worked by hand.
func TestLagBoundMS(t *testing.T) {
	for _, tc := range []struct {
		backends int64
		seqBits  uint
		want     int64
	}{
		{129, 12, 11},  // Twitter at the default 100 connections: 130 values, under 1 ms
		{4095, 12, 11}, // 4096 values: 1 ms
		{4096, 12, 12}, // 4097 values: 2 ms
		{129, 1, 75},   // 130 values at 2 a millisecond
		{229, 4, 25},   // 200 connections: 230 values at 16 a millisecond, 14.4 -> 15
		{529, 1, 275},  // 500 connections, 1 bit
	} {
		if got := LagBoundMS(tc.backends, tc.seqBits); got != tc.want {
			t.Errorf("LagBoundMS(%d, %d) = %d; want %d", tc.backends, tc.seqBits, got, tc.want)
		}
	}
}
