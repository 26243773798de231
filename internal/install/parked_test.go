package install

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// releaseNextID returns release's snowflake_next_id() for schema, as its
// script defines it, renamed to name: the expression a statement planned
// before an upgrade still runs after it (by oid, inlined in its plan).
func releaseNextID(t *testing.T, schema string, release int, name string) string {
	t.Helper()
	script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}, release)
	if err != nil {
		t.Fatal(err)
	}
	head := `CREATE OR REPLACE FUNCTION "` + schema + `".snowflake_next_id()`
	_, rest, ok := strings.Cut(string(script), head)
	if !ok {
		t.Fatalf("release %d's script has no %s", release, head)
	}
	end := ";\n" // a RETURN body
	if strings.Contains(rest[:200], "$fn$") {
		end = "\n$fn$;\n"
	}
	body, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("release %d's snowflake_next_id() has no end", release)
	}
	return `CREATE FUNCTION "` + schema + `".` + name + `()` + body + end
}

// TestOldCodeTakesValuesFromTheLatestSlowPath: after the upgrade from
// release 1 or 6, their guard is at 0, and their snowflake_next_id()
// expression, as a statement planned before the upgrade still runs it,
// takes every value from the latest release's snowflake_next_state()
// (release 1's through snowflake_next_id_slow()), which catches up in
// turns with every other catch-up: its IDs are the node's, and its guard
// stays at 0. (Release 7 parked the guards at the last representable
// millisecond, and such a statement took values straight from the state,
// beside the catch-ups: duplicates, TestUpgradeUnderOldStatement.)
func TestOldCodeTakesValuesFromTheLatestSlowPath(t *testing.T) {
	for _, c := range []struct {
		from, code int // the release upgraded from; that of the old expression
		guard      string
	}{
		{1, 1, "snowflake_state_guard"}, {6, 6, "snowflake_catch_up_guard"},
		// Release 7 left release 6's guard parked, and its code could
		// still run from an upgrade 6 -> 7.
		{7, 6, "snowflake_catch_up_guard"},
	} {
		t.Run(fmt.Sprintf("from%d", c.from), func(t *testing.T) {
			db, schema := database(t)
			ctx := context.Background()
			o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, Datacenter: 3, Machine: 7}
			script, err := released.Script(o, c.from)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema+"; "+string(script)); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, "SELECT "+schema+".snowflake_next_id() FROM generate_series(1, 100)"); err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(ctx, db, o); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, releaseNextID(t, schema, c.code, "old_next_id")); err != nil {
				t.Fatal(err)
			}
			guard := schema + "." + c.guard
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			seen := map[int64]bool{}
			for i := range 5 {
				time.Sleep(time.Duration(i) * 4 * time.Millisecond) // a catch-up due now and then
				var id, calls, g int64
				if _, err := conn.ExecContext(ctx, "BEGIN; SET LOCAL track_functions = 'pl'"); err != nil {
					t.Fatal(err)
				}
				if err := conn.QueryRowContext(ctx, "SELECT "+schema+".old_next_id()").Scan(&id); err != nil {
					t.Fatal(err)
				}
				if err := conn.QueryRowContext(ctx, "SELECT COALESCE(pg_stat_get_xact_function_calls($1::regprocedure), 0), pg_sequence_last_value($2::regclass)",
					schema+".snowflake_next_state()", guard).Scan(&calls, &g); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
					t.Fatal(err)
				}
				if calls < 1 || g != 0 {
					t.Errorf("call %d: release %d's expression made %d with %d calls of the latest snowflake_next_state() and its guard at %d; want at least one call and the guard at 0", i, c.code, id, calls, g)
				}
				p, err := snowflake.Decompose(snowflake.ID(id))
				if err != nil || p.Datacenter != 3 || p.Machine != 7 || seen[id] {
					t.Errorf("call %d: release %d's expression made %d (%+v, %v); want a new ID of node 3/7", i, c.code, id, p, err)
				}
				seen[id] = true
			}
		})
	}
}

// TestUpgradeNamesWhoHoldsReleaseOnesLock holds release 1's catch-up lock
// in another session: the upgrade waits sqlgen.LockWait for it, then fails
// naming that session, and changes nothing.
func TestUpgradeNamesWhoHoldsReleaseOnesLock(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a lock: long; run without -short")
	}
	db, schema := database(t)
	ctx := context.Background()
	o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}
	script, err := released.Script(o, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema+"; "+string(script)+"; SELECT "+schema+".snowflake_next_id()"); err != nil {
		t.Fatal(err)
	}
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	var pid int
	if err := holder.QueryRowContext(ctx, "SELECT pg_backend_pid() FROM (SELECT pg_advisory_lock(1936156416, $1::regclass::oid::integer)) l",
		schema+".snowflake_state").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	upgrade, err := sqlgen.Script(o)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, string(upgrade))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "55P03" || !strings.Contains(pe.Message, fmt.Sprintf("is held by pid %d", pid)) {
		t.Fatalf("upgrade while another session holds release 1's lock = %v; want 55P03 naming pid %d", err, pid)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil { // the script's aborted transaction
		t.Fatal(err)
	}
	var release, lease bool
	if err := conn.QueryRowContext(ctx, "SELECT to_regprocedure($1) IS NOT NULL, to_regclass($2) IS NOT NULL", schema+".snowflake_release()", schema+".snowflake_lease").Scan(&release, &lease); err != nil {
		t.Fatal(err)
	}
	if release || lease {
		t.Errorf("a failed upgrade left the latest release's objects behind: snowflake_release() %v, snowflake_lease %v", release, lease)
	}
}

// TestUpgradeToSevenWaitsForReleaseSixCatchUp: the upgrade to release 7
// takes release 6's catch-up lock before it parks release 6's guard; a
// session holding that lock past sqlgen.LockWait makes it fail, saying
// so, with nothing changed (the schema stays at release 6).
func TestUpgradeToSevenWaitsForReleaseSixCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a lock: long; run without -short")
	}
	db, schema := database(t)
	ctx := context.Background()
	o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, Datacenter: 3, Machine: 7}
	script, err := released.Script(o, 6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, string(script)); err != nil {
		t.Fatal(err)
	}
	holder, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN; LOCK TABLE "+schema+".snowflake_state_lock IN SHARE UPDATE EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, db, o)
	if err == nil || !strings.Contains(err.Error(), "the catch-up lock of releases 2 to 6") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("upgrade while release 6's catch-up lock is held: %v; want it to fail, saying so", err)
	}
	holder.ExecContext(ctx, "ROLLBACK")
	var release int
	if err := db.QueryRowContext(ctx, "SELECT "+schema+".snowflake_release()").Scan(&release); err != nil || release != 6 {
		t.Fatalf("after the failed upgrade: release %d, %v; want 6", release, err)
	}
	if _, err := Apply(ctx, db, o); err != nil {
		t.Fatalf("the upgrade once the lock is free: %v", err)
	}
}
