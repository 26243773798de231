package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// mustExecPool runs each statement on pool.
func mustExecPool(t *testing.T, pool *pgxpool.Pool, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := pool.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// seedStateAhead moves schema's snowflake_state a minute ahead of the
// database's clock, as a clock stepped back a minute leaves it (the way
// the generator contract's ClockStepsBack does), and returns that millisecond.
func seedStateAhead(t *testing.T, pool *pgxpool.Pool, schema string) int64 {
	t.Helper()
	var ahead int64
	if err := pool.QueryRow(context.Background(), `SELECT pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint + 60000`).Scan(&ahead); err != nil {
		t.Fatal(err)
	}
	mustExecPool(t, pool, fmt.Sprintf("SELECT pg_catalog.setval('%s.snowflake_state', %d)", schema, ahead<<snowflake.Twitter().Bits(snowflake.FieldSequence)))
	return ahead
}

// TestGeneratorAheadOfTheClock: with the state a minute ahead of the clock,
// snowflake_next_id() carries on from it, as documented; the check passes
// and says how far ahead the IDs ran, on the fast path and through a
// catch-up alike.
func TestGeneratorAheadOfTheClock(t *testing.T) {
	for _, guard := range []struct{ name, value string }{
		{"fast path", "clock_ms + 60000"}, // a catch-up "recent" for a minute
		{"catch-up due", "0"},
	} {
		t.Run(guard.name, func(t *testing.T) {
			pool, schema := database(t)
			installInto(t, pool, schema)
			mustExecPool(t, pool, "SELECT "+schema+".snowflake_set_node(3, 4)")
			seedStateAhead(t, pool, schema)
			mustExecPool(t, pool, "SELECT pg_catalog.setval('"+schema+"."+catalog.CatchUpGuard(sqlgen.Latest)+"', "+guard.value+
				") FROM (SELECT pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint AS clock_ms) x")
			rep, err := CheckGenerator(context.Background(), pool, schema, snowflake.Twitter(), 4, 2500, 5)
			if err != nil {
				t.Fatal(err)
			}
			borrowed := int64(rep.IDs)>>snowflake.Twitter().Bits(snowflake.FieldSequence) + 1
			if !rep.OK() || rep.IDs != 10000 || rep.Ahead != rep.IDs || rep.AheadMS <= 0 || rep.AheadMS > 60000+borrowed || rep.NoState != "" {
				t.Errorf("a minute ahead of the clock: ok %v, broken %v, %+v; want ok, every ID ahead by at most %d ms", rep.OK(), rep.Broken(), rep, 60000+borrowed)
			}
		})
	}
}

// TestGeneratorBrokenGuarantees plants look-alike generators that break
// one guarantee each (over the real one, renamed) and checks that the
// check fails and names it, and only it.
func TestGeneratorBrokenGuarantees(t *testing.T) {
	const clockMS = "pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint"
	for _, tc := range []struct {
		name   string
		ahead  bool   // seed the state a minute ahead first
		body   string // of the planted snowflake_next_id(), LANGUAGE plpgsql; S is the schema
		broken string // the one guarantee it breaks
		count  func(*GeneratorReport) int
	}{
		{
			name: "duplicates",
			// Each real ID handed out twice in a row (so the second is
			// not above the one before on its connection either).
			body: `DECLARE pending text := pg_catalog.current_setting('sfgen_test.pending', true); a bigint;
			BEGIN
				IF pending IS NOT NULL AND pending <> '' THEN
					PERFORM pg_catalog.set_config('sfgen_test.pending', '', false);
					RETURN pending::bigint;
				END IF;
				a := S.real_next_id();
				PERFORM pg_catalog.set_config('sfgen_test.pending', a::text, false);
				RETURN a;`,
			broken: "duplicates",
			count:  func(g *GeneratorReport) int { return g.Duplicates },
		},
		{
			name: "out of order",
			// Two real IDs a, b per pair of calls, handed out b then a.
			body: `DECLARE pending text := pg_catalog.current_setting('sfgen_test.pending', true); a bigint; b bigint;
			BEGIN
				IF pending IS NOT NULL AND pending <> '' THEN
					PERFORM pg_catalog.set_config('sfgen_test.pending', '', false);
					RETURN pending::bigint;
				END IF;
				a := S.real_next_id(); b := S.real_next_id();
				PERFORM pg_catalog.set_config('sfgen_test.pending', a::text, false);
				RETURN b;`,
			broken: "out of order",
			count:  func(g *GeneratorReport) int { return g.OutOfOrder },
		},
		{
			name: "wrong node",
			// The real ID with machine 4 flipped to 5.
			body:   "RETURN S.real_next_id() # (1::bigint << 12);",
			broken: "wrong node",
			count:  func(g *GeneratorReport) int { return g.WrongNode },
		},
		{
			name:  "below the state",
			ahead: true,
			// Follows the clock, stepped back a minute behind the state,
			// with a sequence of its own: unique and increasing, but below
			// IDs already issued.
			body:   "RETURN S.snowflake_compose(" + clockMS + ", 3, 4, (pg_catalog.nextval('S.planted') % 4096)::integer);",
			broken: "below the state",
			count:  func(g *GeneratorReport) int { return g.BelowState },
		},
		{
			name: "dated outside the run",
			// An hour ahead of the clock, and of the state, which it does
			// not move.
			body:   "RETURN S.snowflake_compose(" + clockMS + " + 3600000, 3, 4, (pg_catalog.nextval('S.planted') % 4096)::integer);",
			broken: "dated outside the run",
			count:  func(g *GeneratorReport) int { return g.OutsideRun },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, schema := database(t)
			installInto(t, pool, schema)
			mustExecPool(t, pool, "SELECT "+schema+".snowflake_set_node(3, 4)",
				"CREATE SEQUENCE "+schema+".planted",
				"ALTER FUNCTION "+schema+".snowflake_next_id() RENAME TO real_next_id")
			if tc.ahead {
				seedStateAhead(t, pool, schema)
			}
			body := tc.body
			if !strings.HasPrefix(body, "DECLARE") {
				body = "BEGIN " + body
			}
			mustExecPool(t, pool, "CREATE FUNCTION "+schema+".snowflake_next_id() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$ "+
				replaceSchema(body, schema)+" END $$")
			// 2,000 IDs in all: the planted sequences stay under 4,096.
			rep, err := CheckGenerator(context.Background(), pool, schema, snowflake.Twitter(), 4, 500, 5)
			if err != nil {
				t.Fatal(err)
			}
			broken := rep.Broken()
			if rep.OK() || tc.count(rep) == 0 || len(rep.Examples) == 0 || !slices.Contains(broken, tc.broken) {
				t.Errorf("planted generator: ok %v, broken %v, %+v; want it to fail for %s", rep.OK(), broken, rep, tc.broken)
			}
			// A duplicate on its own connection is out of order there too;
			// every other planted generator breaks one guarantee.
			if want := []string{tc.broken}; tc.broken == "duplicates" {
				if want = []string{"duplicates", "out of order"}; !slices.Equal(broken, want) {
					t.Errorf("broken %v, want %v", broken, want)
				}
			} else if !slices.Equal(broken, want) {
				t.Errorf("broken %v, want %v: %+v", broken, want, rep)
			}
		})
	}
}

// replaceSchema puts schema for every "S." in body.
func replaceSchema(body, schema string) string {
	out := []byte{}
	for i := 0; i < len(body); i++ {
		if body[i] == 'S' && i+1 < len(body) && body[i+1] == '.' && (i == 0 || !isIdent(body[i-1])) {
			out = append(out, schema...)
			continue
		}
		out = append(out, body[i])
	}
	return string(out)
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// TestGeneratorWithoutState: without a snowflake_state to read, the check
// says so and bounds the IDs by the clock alone: a look-alike at the
// clock passes, one an hour ahead is dated outside the run.
func TestGeneratorWithoutState(t *testing.T) {
	const clockMS = "pg_catalog.floor(pg_catalog.extract('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint"
	for _, tc := range []struct {
		name   string
		offset string // added to the clock's millisecond
		ok     bool
	}{
		{"at the clock", "0", true},
		{"an hour ahead", "3600000", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, schema := database(t)
			installInto(t, pool, schema)
			mustExecPool(t, pool, "SELECT "+schema+".snowflake_set_node(3, 4)",
				"CREATE SEQUENCE "+schema+".planted",
				"CREATE OR REPLACE FUNCTION "+schema+".snowflake_next_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$ SELECT "+schema+".snowflake_compose("+
					clockMS+" + "+tc.offset+", 3, 4, (pg_catalog.nextval('"+schema+".planted') % 4096)::integer) $$",
				"DROP SEQUENCE "+schema+".snowflake_state")
			rep, err := CheckGenerator(context.Background(), pool, schema, snowflake.Twitter(), 4, 500, 5)
			if err != nil {
				t.Fatal(err)
			}
			if rep.NoState == "" || rep.OK() != tc.ok || !tc.ok && !slices.Equal(rep.Broken(), []string{"dated outside the run"}) {
				t.Errorf("without the state: ok %v, broken %v, %+v; want ok %v and no_state said", rep.OK(), rep.Broken(), rep, tc.ok)
			}
		})
	}
}
