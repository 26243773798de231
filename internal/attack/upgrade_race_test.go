package attack

import (
	"context"
	"fmt"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pause"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// oldStatementRows is the size of the INSERT ... SELECT planned before the
// upgrade (issue 39 reproduced its duplicates with 6,000,000).
const oldStatementRows = 6_000_000

// TestUpgradeUnderOldStatement: an INSERT ... SELECT of 6,000,000 rows,
// planned at release `from`, runs on across the upgrade to release `to`;
// a catch-up of the new release, in another session, is paused (gdb) at
// its setval() of the state, between its read of the state and that
// write, while the old statement takes 2,000,000 values; then resumed.
// From release 7 to 8 no ID repeats: release 7's expression is release
// 8's, so the old statement reads release 8's guard, finds it at 0 and
// waits for the catch-up.
//
// From releases 1 to 6 the old statement reads its own, parked guard and
// takes values without regard to the catch-up: the upgrades 6 -> 7 and
// 6 -> 8 run too, as controls, and gave 99 to 4,440 duplicate IDs in most
// runs here (none in some: how far the state is from the clock when the
// paused catch-up reads it decides it, which a test cannot hold still),
// so their counts are logged, not judged. docs/releases.md says to
// upgrade from releases 1 to 6 when no statement planned before the
// upgrade can outlive it.
func TestUpgradeUnderOldStatement(t *testing.T) {
	if testing.Short() {
		t.Skip("a 6,000,000-row statement per case; -short skips it")
	}
	if pgtest.External() {
		t.Skip("pausing a backend needs it on this machine; the tests run on $DATABASE_URL's server")
	}
	if err := pause.Available(); err != nil {
		t.Skipf("cannot pause a backend here: %v", err)
	}
	for _, c := range []struct{ from, to int }{{6, 7}, {6, sqlgen.Latest}, {7, sqlgen.Latest}} {
		t.Run(fmt.Sprintf("%d_to_%d", c.from, c.to), func(t *testing.T) {
			duplicates, paused := upgradeUnderOldStatement(t, c.from, c.to)
			details := fmt.Sprintf("%d duplicate IDs; the new release's catch-up paused at its setval() of the state: %v", duplicates, paused)
			if c.from < 7 {
				t.Logf("control, release %d to %d: %s", c.from, c.to, details)
				return
			}
			if duplicates > 0 {
				t.Errorf("release %d: %s", c.to, details)
			} else {
				t.Logf("release %d: %s", c.to, details)
			}
		})
	}
}

func upgradeUnderOldStatement(t *testing.T, from, to int) (duplicates int64, paused bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := newEnv(t)
	o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1}
	e.script34(from, o)
	e.exec(`CREATE TABLE public.bulk (id bigint DEFAULT ids.snowflake_next_id(), n int);
		CREATE TABLE public.single (id bigint DEFAULT ids.snowflake_next_id(), n int)`)
	if from <= 6 {
		// Release 6's own catch-up, in the statement, would hold its
		// table lock to the end of the statement, and the upgrade wait
		// for it; a guard an hour ahead keeps it on the fast path, as the
		// upgrade's parking of that guard does.
		e.exec("SELECT pg_catalog.setval('ids.snowflake_catch_up_guard', (floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3600000))")
	}

	old := e.connect("")
	// JIT would inline nextval_oid() into the statement's code, where no
	// breakpoint finds it.
	old.exec(t, "SET jit = off")
	oldPID := old.pid(t)
	oldDone := make(chan error, 1)
	go func() {
		_, err := old.ExecContext(ctx, fmt.Sprintf("INSERT INTO public.bulk (n) SELECT g FROM pg_catalog.generate_series(1, %d) g", oldStatementRows))
		oldDone <- err
	}()
	// Running, and taking values: planned at release from.
	watch := e.connect("")
	for {
		var n int64
		if err := watch.QueryRowContext(ctx, `SELECT pg_catalog.count(*) FROM pg_catalog.pg_locks l
			WHERE l.pid = $1 AND l.relation = 'ids.snowflake_state'::regclass`, oldPID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		select {
		case err := <-oldDone:
			t.Fatalf("the old statement ended before the upgrade: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	upgradeStart := time.Now()
	e.script34(to, o)
	t.Logf("upgrade took %s", time.Since(upgradeStart))
	select {
	case err := <-oldDone:
		t.Fatalf("the old statement ended during the upgrade (%v): it held a lock the upgrade waited for", err)
	default:
	}

	b := e.connect("")
	var stateOID uint64
	if err := b.QueryRowContext(ctx, "SELECT 'ids.snowflake_state'::regclass::oid::int8").Scan(&stateOID); err != nil {
		t.Fatal(err)
	}
	// The old statement held at one of its nextval()s, so that the new
	// release's session is the one whose catch-up is due.
	po, err := pause.At(ctx, oldPID, "nextval_oid", stateOID, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { po.Resume() })
	if err := po.Wait(ctx); err != nil {
		t.Fatalf("waiting for the old statement's nextval(): %v", err)
	}
	// The state at the clock, then a catch-up due: the new release's
	// catch-up reads a state close to the clock, so that values the old
	// statement takes while it is paused are above its setval().
	p, err := pause.At(ctx, b.pid(t), "setval_oid", stateOID, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Resume() })
	// A setval() of another sequence first: gdb's first look at the
	// breakpoint's condition may be slow, and the catch-up's setval() of
	// the guard, before it reads the state, is one such look.
	b.exec(t, "CREATE TEMPORARY SEQUENCE warm; SELECT pg_catalog.setval('warm', 1); SELECT pg_catalog.setval('warm', 2)")
	e.exec(`SELECT pg_catalog.setval('ids.snowflake_state', (floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1) << 12);
		SELECT pg_catalog.setval('ids.snowflake_caught_up', 1)`)
	bDone := make(chan error, 1)
	go func() {
		_, err := b.ExecContext(ctx, "INSERT INTO public.single (n) VALUES (1)")
		bDone <- err
	}()
	stopped := make(chan error, 1)
	go func() { stopped <- p.Wait(ctx) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("waiting for the catch-up's setval(): %v", err)
		}
		paused = true
		// The old statement goes on while the catch-up is paused, until
		// it has taken 2,000,000 values (far more than the catch-up
		// will set the state back by, if it does), or it waits (on the
		// catch-up: release 7's and 8's expressions).
		lastValue := func() int64 {
			t.Helper()
			var v int64
			if err := watch.QueryRowContext(ctx, "SELECT last_value FROM ids.snowflake_state").Scan(&v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		atPause := lastValue()
		if err := po.Resume(); err != nil {
			t.Fatal(err)
		}
		for before := atPause; lastValue() < atPause+2_000_000; {
			time.Sleep(100 * time.Millisecond)
			if v := lastValue(); v == before {
				t.Logf("the old statement waits, at %d values past the catch-up's pause", v-atPause)
				break // waiting for the catch-up
			} else {
				before = v
			}
		}
		t.Logf("the old statement took %d values while the catch-up was paused", lastValue()-atPause)
		if err := p.Resume(); err != nil {
			t.Fatal(err)
		}
		if err := <-bDone; err != nil {
			t.Fatalf("the new release's insert: %v", err)
		}
	case err := <-bDone:
		// Its catch-up did not reach a setval() of the state.
		if err != nil {
			t.Fatalf("the new release's insert: %v", err)
		}
		if err := p.Resume(); err != nil {
			t.Fatal(err)
		}
		if err := po.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-oldDone:
		if err != nil {
			t.Fatalf("the old statement: %v", err)
		}
	case <-time.After(2 * time.Minute):
		// Seen once in a control (release 6's statement across the upgrade
		// to 7, under the race detector's load): it stopped taking values
		// and never ended. Say where it is, end it, and for a control
		// report no count.
		var where string
		watch.QueryRowContext(ctx, "SELECT coalesce(wait_event_type || ':' || wait_event, state) FROM pg_catalog.pg_stat_activity WHERE pid = $1", oldPID).Scan(&where)
		watch.ExecContext(ctx, "SELECT pg_catalog.pg_cancel_backend($1)", oldPID)
		<-oldDone
		if from < 7 {
			t.Logf("control: the old statement (release %d) did not end 2 minutes after the catch-up went on (%s); cancelled", from, where)
			return -1, paused
		}
		t.Fatalf("the old statement (release %d) did not end 2 minutes after the catch-up went on (%s)", from, where)
	}
	if err := watch.QueryRowContext(ctx, `SELECT pg_catalog.count(*) - pg_catalog.count(DISTINCT id)
		FROM (SELECT id FROM public.bulk UNION ALL SELECT id FROM public.single) ids`).Scan(&duplicates); err != nil {
		t.Fatal(err)
	}
	return duplicates, paused
}
