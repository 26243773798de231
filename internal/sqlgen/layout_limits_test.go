package sqlgen_test

// Tests, against a real PostgreSQL, of the facts behind the limits
// snowflake.NewLayout puts on layouts: where the release 2 SQL's
// arithmetic stops being exact or starts to wrap, and that past a
// layout's last time the generator fails rather than wraps.

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestSQLArithmeticLimits checks, in PostgreSQL, the two limits of
// release 2's arithmetic: snowflake_timestamp()'s expression is exact up
// to idkit.SQLMaxMillis and not one millisecond after; and bigint <<,
// as snowflake_next_state() shifts the clock, fits for clock readings up
// to idkit.StateMaxMillis with 16 sequence bits, and wraps silently,
// without an error, past them.
func TestSQLArithmeticLimits(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	ctx := context.Background()
	exact := func(ms int64) bool {
		var ok bool
		// snowflake_timestamp()'s expression, as compose.sql.tmpl has it.
		if err := conn.QueryRow(ctx, `SELECT pg_catalog.extract('epoch', '1970-01-01 00:00:00+00'::pg_catalog.timestamptz
			OPERATOR(pg_catalog.+) ($1::bigint OPERATOR(pg_catalog.*) INTERVAL '1 millisecond')) OPERATOR(pg_catalog.*) 1000 = $1::pg_catalog.numeric`, ms).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for ms := idkit.SQLMaxMillis - 100; ms <= idkit.SQLMaxMillis; ms++ {
		if !exact(ms) {
			t.Fatalf("snowflake_timestamp()'s arithmetic is not exact at %d ms, before SQLMaxMillis", ms)
		}
	}
	if exact(idkit.SQLMaxMillis + 1) {
		t.Errorf("snowflake_timestamp()'s arithmetic is exact at SQLMaxMillis+1: the limit is not tight")
	}
	shift := func(ms int64, bits int) int64 {
		return queryInt(t, conn, "SELECT $1::bigint OPERATOR(pg_catalog.<<) $2::integer", ms, bits)
	}
	if got, want := shift(idkit.StateMaxMillis, 16), idkit.StateMaxMillis<<16; got != want {
		t.Errorf("StateMaxMillis << 16 = %d in PostgreSQL, want %d", got, want)
	}
	if got := shift(idkit.StateMaxMillis+1, 16); got >= 0 {
		t.Errorf("(StateMaxMillis+1) << 16 = %d in PostgreSQL; want it wrapped to a negative number", got)
	}
	// With 17 sequence bits even SQLMaxMillis wraps, so NewLayout stops at 16.
	if got := shift(idkit.SQLMaxMillis, 17); got >= 0 {
		t.Errorf("SQLMaxMillis << 17 = %d in PostgreSQL; want it wrapped", got)
	}
}

// TestClockPastLayout checks that past a layout's last time the generator
// fails (SQLSTATE 22003, or 2200H from the sequence's MAXVALUE) rather
// than wrapping into an ID: for a layout whose time is already over the
// install fails, and for one whose last time comes a second after the
// install, snowflake_next_id() makes IDs until then and only errors after.
func TestClockPastLayout(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	ctx := context.Background()
	isRangeError := func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && (pgErr.Code == "22003" || pgErr.Code == "2200H")
	}
	over, err := snowflake.NewLayout(0, 30, 1, 16, 16) // ends 1970-01-13
	if err != nil {
		t.Fatal(err)
	}
	script, err := sqlgen.Script(sqlgen.Options{Layout: over, Schema: "over"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(script)); !isRangeError(err) {
		t.Errorf("installing %v, whose time is over: %v; want an out-of-range error", over, err)
	}
	mustExec(t, conn, "ROLLBACK") // the script's transaction

	now := nowMs(t, conn)
	soon, err := snowflake.NewLayout(now-1000, 11, 18, 18, 16) // ends about a second from now
	if err != nil {
		t.Fatal(err)
	}
	installScript(t, conn, sqlgen.Options{Layout: soon, Schema: "soon", Datacenter: 1, Machine: 2})
	id := queryInt(t, conn, "SELECT soon.snowflake_next_id()")
	if p, err := soon.Decompose(snowflake.ID(id)); err != nil || p.Datacenter != 1 || p.Machine != 2 || p.Timestamp < now {
		t.Fatalf("snowflake_next_id() = %d: %+v, %v", id, p, err)
	}
	// Wait for the database's clock to pass the layout's last time.
	for nowMs(t, conn) <= soon.Max(snowflake.FieldTimestamp)+sqlgen.StaleAfter.Milliseconds() {
		mustExec(t, conn, "SELECT pg_catalog.pg_sleep(0.05)")
	}
	for i := range 200 {
		var got int64
		err := conn.QueryRow(ctx, "SELECT soon.snowflake_next_id()").Scan(&got)
		if !isRangeError(err) {
			p, _ := soon.Decompose(snowflake.ID(got))
			t.Fatalf("call %d after the last time of %v: %d (%+v), %v; want an out-of-range error", i, soon, got, p, err)
		}
	}
}
