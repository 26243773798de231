package install

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// releaseOneSlowPath returns release 1's snowflake_next_id_slow() for
// schema, as release 1's script defines it, renamed to name: release 1's
// code as a statement planned before the upgrade would still run it.
func releaseOneSlowPath(t *testing.T, schema, name string) string {
	t.Helper()
	return releaseFunction(t, schema, 1, "snowflake_next_id_slow", name)
}

// releaseFunction is release's PL/pgSQL function fn() (no arguments) as
// its script writes it in schema, under name: what a statement planned
// before an upgrade still runs.
func releaseFunction(t *testing.T, schema string, release int, fn, name string) string {
	t.Helper()
	script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}, release)
	if err != nil {
		t.Fatal(err)
	}
	head := `CREATE OR REPLACE FUNCTION "` + schema + `".` + fn + `()`
	_, rest, ok := strings.Cut(string(script), head)
	if !ok {
		t.Fatalf("release %d's script has no %s", release, head)
	}
	body, _, ok := strings.Cut(rest, "\n$fn$;\n")
	if !ok {
		t.Fatalf("release %d's %s() has no end", release, fn)
	}
	return `CREATE FUNCTION "` + schema + `".` + name + `()` + body + "\n$fn$;\n"
}

// TestReleaseOneCodeNeverCatchesUpAfterTheUpgrade runs release 1's slow
// path after the upgrade, well past the moment it would catch up: with
// release 1's guard parked, it takes one value from the shared state and
// moves nothing (two catch-ups of different releases at once could move
// the state back), and its ID is a valid one of the database's node.
func TestReleaseOneCodeNeverCatchesUpAfterTheUpgrade(t *testing.T) {
	db, schema := database(t)
	ctx := context.Background()
	o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, Datacenter: 3, Machine: 7}
	script, err := released.Script(o, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema+"; "+string(script)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "SELECT "+schema+".snowflake_next_id() FROM generate_series(1, 100)"); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, db, o); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, releaseOneSlowPath(t, schema, "release_1_slow_path")); err != nil {
		t.Fatal(err)
	}
	var parked int64
	if err := db.QueryRowContext(ctx, "SELECT pg_sequence_last_value($1::regclass)", schema+".snowflake_state_guard").Scan(&parked); err != nil {
		t.Fatal(err)
	}
	if max := snowflake.Twitter().Max(snowflake.FieldTimestamp); parked != max {
		t.Fatalf("release 1's guard is %d after the upgrade; want it parked at %d", parked, max)
	}
	// The sessions around a statement still running release 1's code make
	// IDs with the latest release's, whose catch-ups keep the state up with
	// the clock: one such call comes right before each of release 1's.
	// (With none at all, release 1's code finds the state far behind and
	// loops until one comes.) On a loaded machine that one can come too
	// early: then, after a second, a rescuer makes such calls from a
	// connection of its own until release 1's returns, and that call's
	// count of nextval()s is not judged (the rescuer's move the state too).
	for i := range 3 {
		// Past release 1's catch-up period; then the latest release
		// catches up.
		time.Sleep(12 * time.Millisecond)
		if _, err := db.ExecContext(ctx, "SELECT "+schema+".snowflake_next_id()"); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var rescued atomic.Bool
		go func() {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
			}
			rescued.Store(true)
			for {
				select {
				case <-done:
					return
				default:
				}
				db.ExecContext(ctx, "SELECT "+schema+".snowflake_next_id()")
				time.Sleep(time.Millisecond)
			}
		}()
		var before, after, id, guard int64
		err := db.QueryRowContext(ctx, "SELECT pg_sequence_last_value($1::regclass), "+schema+".release_1_slow_path(), pg_sequence_last_value($1::regclass), pg_sequence_last_value($2::regclass)",
			schema+".snowflake_state", schema+".snowflake_state_guard").Scan(&before, &id, &after, &guard)
		close(done)
		if err != nil {
			t.Fatal(err)
		}
		if guard != parked {
			t.Errorf("call %d: release 1's slow path caught up (its guard is %d, was parked at %d)", i, guard, parked)
		}
		if rescued.Load() {
			t.Logf("call %d: the state was far behind, so calls of the latest release's came beside it; its count of nextval()s is not judged", i)
		} else if after != before+1 {
			t.Errorf("call %d: release 1's slow path moved the state from %d to %d; want one nextval()", i, before, after)
		}
		p, err := snowflake.Decompose(snowflake.ID(id))
		if err != nil || p.Datacenter != 3 || p.Machine != 7 || p.Timestamp > after>>12 || (!rescued.Load() && p.Timestamp != after>>12) {
			t.Errorf("call %d: release 1's slow path made %d (%+v, %v); want node 3/7 and the state's millisecond %d", i, id, p, err, after>>12)
		}
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

// releaseSixNextState is release 6's snowflake_next_state(), under name,
// in schema.
func releaseSixNextState(t *testing.T, schema, name string) string {
	t.Helper()
	return releaseFunction(t, schema, 6, "snowflake_next_state", name)
}

// TestReleaseSixCodeNeverCatchesUpAfterTheUpgrade: after the upgrade to
// release 7, which catches up in turns, release 6's guard is parked, and
// release 6's slow path (whose catch-up, under its table lock, would be
// due by its guard as it was before the upgrade) moves nothing: it takes
// one value from the shared state. Two catch-ups under different exclusions could move the state
// back.
func TestReleaseSixCodeNeverCatchesUpAfterTheUpgrade(t *testing.T) {
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
	if _, err := db.ExecContext(ctx, "SELECT "+schema+".snowflake_next_id() FROM generate_series(1, 100)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, releaseSixNextState(t, schema, "release_6_next_state")); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, db, o); err != nil {
		t.Fatal(err)
	}
	oldGuard, state := schema+".snowflake_catch_up_guard", schema+".snowflake_state"
	var parked int64
	if err := db.QueryRowContext(ctx, "SELECT pg_sequence_last_value($1::regclass)", oldGuard).Scan(&parked); err != nil {
		t.Fatal(err)
	}
	if max := snowflake.Twitter().Max(snowflake.FieldTimestamp); parked != max {
		t.Fatalf("release 6's guard is %d after the upgrade; want it parked at %d", parked, max)
	}
	for i := range 3 {
		// The state a minute ahead of the clock, so that release 6's code
		// never finds it far behind (it would loop until something else
		// caught up); its own guard, were it not parked, would be from
		// before the upgrade, so a catch-up would be due by its reckoning.
		if _, err := db.ExecContext(ctx, "SELECT setval($1::regclass, (trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000) << 12)", state); err != nil {
			t.Fatal(err)
		}
		var before, got, after, guard int64
		if err := db.QueryRowContext(ctx, "SELECT pg_sequence_last_value($1::regclass), "+schema+".release_6_next_state(), pg_sequence_last_value($1::regclass), pg_sequence_last_value($2::regclass)",
			state, oldGuard).Scan(&before, &got, &after, &guard); err != nil {
			t.Fatal(err)
		}
		if guard != parked {
			t.Errorf("call %d: release 6's catch-up ran (its guard is %d, was parked at %d)", i, guard, parked)
		}
		if got != before+1 || after != got {
			t.Errorf("call %d: release 6's slow path returned %d with the state at %d before and %d after; want one nextval()", i, got, before, after)
		}
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
