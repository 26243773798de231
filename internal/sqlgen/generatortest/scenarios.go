package generatortest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/idkit"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

var tw = snowflake.Twitter()

// scenarios are the contract, one guarantee each, in the order Run runs
// them.
var scenarios = []struct {
	name string
	run  func(t *testing.T, g Generator)
}{
	{"ConcurrentUniqueAndMonotonic", concurrentUniqueAndMonotonic},
	{"OneStatementUsesTheClock", oneStatementUsesTheClock},
	{"ClockStepsBack", clockStepsBack},
	{"BorrowsTheNextMillisecond", borrowsTheNextMillisecond},
	{"RollbackNeverReuses", rollbackNeverReuses},
	{"SurvivesRestart", survivesRestart},
	{"CancelNeverLeavesALock", cancelNeverLeavesALock},
	{"CatchUpInOpenTransactionBlocksNoOne", catchUpInOpenTransactionBlocksNoOne},
	{"NodeOnlyOwnerChanges", nodeOnlyOwnerChanges},
	{"NodeChangeReachesLongLivedSessions", nodeChangeReachesLongLivedSessions},
	{"OtherLayout", otherLayout},
	{"CatchesUpOncePerPeriod", catchesUpOncePerPeriod},
	{"FastPathWindow", fastPathWindow},
}

// concurrentUniqueAndMonotonic: 8 sessions inserting at once (through a
// primary key) get distinct IDs, each session's IDs increase, every ID
// carries the node, and its time is the clock's: never after the
// clock_timestamp() its row reads after the ID (floored, not rounded, and
// not ahead), and at most sqlgen.LagLimit behind the one its row reads
// before it.
//
// The one exception is docs/generator.md's, the same for both generators:
// a slow path that waits sqlgen.CatchUpLockWait for the catch-up lock (on
// a loaded machine a catch-up's session can be descheduled that long)
// then uses the value it took, dated late. Such a call lasts at least
// CatchUpLockWait between the two clock reads around it, so only a call
// that long may be further behind; no other is let off. (The SQL copy of
// this test held every call to LagLimit, which fails on a loaded machine:
// both generators date a few such calls late there; the native copy let
// every call off by CatchUpLockWait.) How far behind, as a rule, depends
// on the machine: it is logged, not checked.
func concurrentUniqueAndMonotonic(t *testing.T, g Generator) {
	dsn, conn := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 21, Machine: 12})
	// An INSERT evaluates the defaults in column order: before, id, after.
	MustExec(t, conn, `CREATE TABLE t (before timestamptz NOT NULL DEFAULT clock_timestamp(),
		id bigint PRIMARY KEY DEFAULT snowflake_next_id(),
		after timestamptz NOT NULL DEFAULT clock_timestamp(), worker int NOT NULL)`)
	const workers, perWorker = 8, 3000
	lagLimit := sqlgen.LagLimit.Milliseconds()
	ids := make([][]int64, workers)
	lags := make([][]int64, workers) // behind the clock read before the ID, ms
	var datedLate atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx := context.Background()
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(ctx)
			for i := 0; i < perWorker; i++ {
				var id int64
				var before, after time.Time
				if err := c.QueryRow(ctx, "INSERT INTO t(worker) VALUES ($1) RETURNING before, id, after", w).Scan(&before, &id, &after); err != nil {
					errs <- err
					return
				}
				if n := len(ids[w]); n > 0 && id <= ids[w][n-1] {
					errs <- fmt.Errorf("worker %d: ID %d after %d", w, id, ids[w][n-1])
					return
				}
				d, err := tw.Decompose(snowflake.ID(id))
				if err != nil {
					errs <- fmt.Errorf("worker %d: ID %d: %w", w, id, err)
					return
				}
				if d.Datacenter != 21 || d.Machine != 12 {
					errs <- fmt.Errorf("worker %d: ID %d has node %d/%d, want 21/12", w, id, d.Datacenter, d.Machine)
					return
				}
				b, a := before.UnixMilli(), after.UnixMilli()
				waited := after.Sub(before) >= sqlgen.CatchUpLockWait
				if d.Timestamp > a || d.Timestamp < b-lagLimit && !waited {
					errs <- fmt.Errorf("worker %d: ID %d is at %d ms; the clock read %d ms before it and %d ms after (a call of %v): want a time in [%d, %d]",
						w, id, d.Timestamp, b, a, after.Sub(before), b-lagLimit, a)
					return
				}
				if d.Timestamp < b-lagLimit {
					datedLate.Add(1)
				}
				ids[w] = append(ids[w], id)
				lags[w] = append(lags[w], b-d.Timestamp)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	var all, lag []int64
	for w := range ids {
		all = append(all, ids[w]...)
		lag = append(lag, lags[w]...)
	}
	CheckUnique(t, all)
	if n := QueryInt(t, conn, "SELECT count(*) FROM t"); n != workers*perWorker {
		t.Fatalf("%d rows, want %d", n, workers*perWorker)
	}
	slices.Sort(lag)
	t.Logf("%s: time behind the clock read before the ID: p50 %d ms, p99 %d ms, max %d ms over %d IDs; %d dated late after a call of %v or more",
		g.Name, lag[len(lag)/2], lag[len(lag)*99/100], lag[len(lag)-1], len(lag), datedLate.Load(), sqlgen.CatchUpLockWait)
}

// oneStatementUsesTheClock: within one statement each ID's time is
// clock_timestamp() at the call, not the statement's or the transaction's
// start (statement_timestamp(), now()), which would give every row of a
// long statement the same millisecond. The statement sleeps before each
// row, longer than sqlgen.LagLimit, so that each call finds the state
// behind the clock and catches up, and makes one ID a row: far too few
// for borrowing to move the time on. Each ID's time is then between
// clock_timestamp() read just before and just after it, and the IDs span
// at least the time slept.
func oneStatementUsesTheClock(t *testing.T, g Generator) {
	_, conn := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter()})
	const rows, sleep = 5, 20 * time.Millisecond
	if sleep <= sqlgen.LagLimit {
		t.Fatalf("sleep %v must be longer than sqlgen.LagLimit %v", sleep, sqlgen.LagLimit)
	}
	// Per row: the WHERE clause (the sleep), then the select list in order.
	q := fmt.Sprintf(`SELECT clock_timestamp(), snowflake_next_id(), clock_timestamp()
		FROM generate_series(1, %d) g WHERE pg_sleep(%g) IS NOT NULL`, rows, sleep.Seconds())
	type row struct {
		Before time.Time
		ID     int64
		After  time.Time
	}
	r, err := conn.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(r, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != rows {
		t.Fatalf("%d rows, want %d", len(got), rows)
	}
	ms := make([]int64, rows)
	for i, r := range got {
		d, err := tw.Decompose(snowflake.ID(r.ID))
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = d.Timestamp
		if before, after := r.Before.UnixMilli(), r.After.UnixMilli(); ms[i] < before || ms[i] > after {
			t.Errorf("row %d: ID %d is at %d ms, outside the clock_timestamp() around it [%d, %d]: its time is not the clock's at the call", i+1, r.ID, ms[i], before, after)
		}
		if i > 0 && r.ID <= got[i-1].ID {
			t.Errorf("row %d: ID %d not above %d before it", i+1, r.ID, got[i-1].ID)
		}
	}
	if span, slept := ms[rows-1]-ms[0], int64(rows-1)*sleep.Milliseconds(); span < slept {
		t.Errorf("IDs of one statement span %d ms, less than the %d ms slept between them: their time does not come from clock_timestamp()", span, slept)
	}
}

// clockStepsBack: with the state a minute ahead of the clock (as after
// the clock stepped back a minute), IDs carry on from the highest one
// issued, on the fast path and through a catch-up alike (a catch-up never
// moves the state back): no error, and no waiting for the clock, which is
// still behind the state when the statement ends.
func clockStepsBack(t *testing.T, g Generator) {
	for _, c := range []struct {
		name  string
		guard string // what the catch-up guard is set to before the statement
	}{
		{"fast path", "clock_ms + 60000"}, // a catch-up "recent" for a minute
		{"catch-up due", fmt.Sprintf("clock_ms - %d", sqlgen.StaleAfter.Milliseconds())},
		{"catch-up cut short", "0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, conn := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter()})
			last := QueryInt(t, conn, "SELECT snowflake_next_id()")
			d, err := tw.Decompose(snowflake.ID(last))
			if err != nil {
				t.Fatal(err)
			}
			ahead := d.Timestamp + 60000
			MustExec(t, conn, "SELECT setval('snowflake_state', $1)", ahead<<12)
			MustExec(t, conn, "SELECT setval('snowflake_caught_up', "+c.guard+") FROM (SELECT trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS clock_ms) x")
			rows, err := conn.Query(context.Background(), "SELECT snowflake_next_id() FROM generate_series(1, 10000)")
			if err != nil {
				t.Fatal(err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				t.Fatal(err)
			}
			if now := NowMs(t, conn); now >= ahead {
				t.Errorf("the clock reached the state (%d ms) before the IDs were made (now %d ms): it waited", ahead, now)
			}
			// Straight on from the seeded state, 4096 a millisecond, whatever
			// the clock says (a catch-up may skip a value, never go back).
			for i, id := range ids {
				d, _ := tw.Decompose(snowflake.ID(id))
				if d.Timestamp < ahead || d.Timestamp > ahead+3 || i > 0 && id <= ids[i-1] {
					t.Fatalf("ID %d after the step back is at %d ms (seeded state at %d): not continuing from the highest", i, d.Timestamp, ahead)
				}
			}
			if ids[0] <= last {
				t.Fatalf("first ID after the step back %d <= %d before it", ids[0], last)
			}
		})
	}
}

// borrowsTheNextMillisecond: past the last sequence of a millisecond (4,095
// IDs) the next ID takes sequence 0 of the next millisecond at once
// (borrows it), five seconds ahead of the clock, rather than waiting for
// the clock, which is still behind the borrowed millisecond when the
// statement ends. Exactly: 4094 and 4095 of the millisecond, then 0, 1 of
// the next.
func borrowsTheNextMillisecond(t *testing.T, g Generator) {
	_, conn := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter()})
	ms := NowMs(t, conn) + 5000
	MustExec(t, conn, "SELECT setval('snowflake_state', $1)", ms<<12|4093)
	rows, err := conn.Query(context.Background(), "SELECT snowflake_next_id() FROM generate_series(1, 4)")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if now := NowMs(t, conn); now > ms {
		t.Errorf("the clock reached the full millisecond %d before the IDs were made (now %d): it waited", ms, now)
	}
	var got []snowflake.Parts
	for _, id := range ids {
		d, err := tw.Decompose(snowflake.ID(id))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d)
	}
	want := []snowflake.Parts{{Timestamp: ms, Sequence: 4094}, {Timestamp: ms, Sequence: 4095}, {Timestamp: ms + 1, Sequence: 0}, {Timestamp: ms + 1, Sequence: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("IDs across a full millisecond %+v, want %+v", got, want)
	}
}

// rollbackNeverReuses: an ID whose insert was rolled back, with its
// transaction or a savepoint, is never handed out again: not by the next
// call, whether or not the rolled-back work included a catch-up, and not
// after a catch-up when the rolled-back ID was ahead of the clock. (The
// state is a sequence, which a rollback does not put back.)
func rollbackNeverReuses(t *testing.T, g Generator) {
	// After a pause: the state far behind the clock, the last catch-up old.
	behind := "SELECT setval('snowflake_state', (trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000) << 12); " + staleGuard
	ahead := "SELECT setval('snowflake_state', (trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000) << 12)"
	for _, c := range []struct {
		name       string
		setup      string // before the transaction
		begin      string // how the rolled-back ID's transaction starts
		rollback   string
		catchUp    bool   // the rolled-back statement must have caught up
		beforeNext string // between the rollback and the next ID
	}{
		{"transaction", "", "BEGIN", "ROLLBACK", false, ""},
		{"transaction that caught up", behind, "BEGIN", "ROLLBACK", true, ""},
		{"savepoint around a catch-up", behind, "BEGIN; SAVEPOINT s", "ROLLBACK TO s; COMMIT", true, ""},
		{"ahead of the clock, then a catch-up", ahead, "BEGIN", "ROLLBACK", false, staleGuard},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, conn := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter()})
			MustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), v int)")
			if c.setup != "" {
				MustExec(t, conn, c.setup)
			}
			before := guard(t, conn)
			MustExec(t, conn, c.begin)
			rolled := QueryInt(t, conn, "INSERT INTO t(v) VALUES (1) RETURNING id")
			if now := guard(t, conn); c.catchUp && now == before {
				t.Fatalf("the rolled-back insert did not catch up (guard still %d)", now)
			}
			MustExec(t, conn, c.rollback)
			if c.beforeNext != "" {
				MustExec(t, conn, c.beforeNext)
				before = guard(t, conn)
			}
			if next := QueryInt(t, conn, "INSERT INTO t(v) VALUES (2) RETURNING id"); next <= rolled {
				t.Fatalf("ID after the rollback %d <= rolled-back %d", next, rolled)
			}
			if now := guard(t, conn); c.beforeNext != "" && now == before {
				t.Fatalf("the insert after the rollback did not catch up (guard still %d)", now)
			}
		})
	}
}

// survivesRestart: after a clean restart (fast shutdown), after a crash
// (immediate shutdown, recovery from WAL) and after a crash that follows a
// checkpoint, the next ID is above every ID handed out before, even with
// the state ahead of the clock (so that the clock cannot put it right)
// and the last IDs taken by a transaction that wrote nothing else; and
// snowflake_next_id() is still the generator's. The crash after a
// checkpoint is the one nextval()'s redo-point rule is for: the checkpoint
// writes the page with the state as it is, not the value logged ahead, so
// the first call after it must log again. It needs a server of its own to
// restart, so it skips where there are no server binaries.
func survivesRestart(t *testing.T, g Generator) {
	cluster := pgtest.Server(t)
	dsn := cluster.DSN()
	ctx := context.Background()
	conn := Connect(t, dsn)
	g.Install(t, conn, sqlgen.Options{Layout: snowflake.Twitter()})
	MustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	conn.Close(ctx)
	for _, restart := range []struct {
		name              string
		crash, checkpoint bool
	}{{"fast shutdown", false, false}, {"crash", true, false}, {"crash after a checkpoint", true, true}} {
		conn := Connect(t, dsn)
		started := QueryInt(t, conn, "SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint")
		// The state a minute ahead of the clock: only the state itself
		// can say where IDs are.
		MustExec(t, conn, "SELECT setval('snowflake_state', $1)", (NowMs(t, conn)+60000)<<12)
		for i := 0; i < 100; i++ {
			QueryInt(t, conn, "INSERT INTO t DEFAULT VALUES RETURNING id")
		}
		// A read-only transaction that only takes IDs: it must not lose them.
		taken := "SELECT max(snowflake_next_id()) FROM generate_series(1, 50)"
		if restart.checkpoint {
			MustExec(t, conn, "CHECKPOINT")
			taken = "SELECT max(snowflake_next_id()) FROM generate_series(1, 5)"
		}
		last := QueryInt(t, conn, taken)
		if d, _ := tw.Decompose(snowflake.ID(last)); d.Timestamp <= NowMs(t, conn) {
			t.Fatalf("before the %s the last ID is at %d ms, not ahead of the clock", restart.name, d.Timestamp)
		}
		conn.Close(ctx)
		if err := cluster.Restart(ctx, restart.crash); err != nil {
			t.Fatalf("restart (%s): %v", restart.name, err)
		}
		conn = Connect(t, dsn)
		if s := QueryInt(t, conn, "SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint"); s == started {
			t.Fatalf("the server did not restart")
		}
		var lang string
		if err := conn.QueryRow(ctx, "SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.oid = 'snowflake_next_id()'::regprocedure").Scan(&lang); err != nil || lang != g.Language {
			t.Fatalf("after the %s snowflake_next_id() is in %q (%v), want %s's %q", restart.name, lang, err, g.Name, g.Language)
		}
		if next := QueryInt(t, conn, "SELECT snowflake_next_id()"); next <= last {
			t.Fatalf("after a %s, next ID %d <= %d before it", restart.name, next, last)
		}
		conn.Close(ctx)
	}
}

// cancelNeverLeavesALock: sessions inserting while others are cancelled
// midway (statement_timeout of 1 to 3 ms on long multi-row inserts,
// pg_cancel_backend at random) and catch-ups are cut short (the guard set
// to 0): no single-row insert waits lock_timeout (2 s) for a lock or runs
// for statement_timeout (30 s); once every statement has ended, no
// session holds a lock; every ID is unique; and the next call finishes a
// cut-short catch-up. It runs until enough of each has happened, not for
// a fixed time.
func cancelNeverLeavesALock(t *testing.T, g Generator) {
	dsn, conn := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter()})
	MustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), w int)")
	ctx := context.Background()
	const minCancelled, minInserted, minCutShort = 300, 10000, 30
	deadline := time.Now().Add(2 * time.Minute)
	var (
		wg                            sync.WaitGroup
		stop                          Stop
		inserted, cancelled, cutShort atomic.Int64
	)
	// Sessions 0-3 make single-row inserts, which fail the test if they
	// wait lock_timeout for a lock or run for statement_timeout; 4-7 long
	// inserts, cut short by a 1-3 ms timeout. They stay open until the
	// locks are looked at.
	sessions := make([]*pgx.Conn, 8)
	pids := make([]uint32, len(sessions))
	for w := range sessions {
		sessions[w] = Connect(t, dsn)
		timeout, rows := "'30s'", 1
		if w >= 4 {
			timeout, rows = fmt.Sprint(1+w%3), 2000
		}
		MustExec(t, sessions[w], "SET lock_timeout = '2s'; SET statement_timeout = "+timeout)
		pids[w] = sessions[w].PgConn().PID()
		wg.Add(1)
		go func(w int, c *pgx.Conn, rows int) {
			defer wg.Done()
			for !stop.Stopped() {
				tag, err := c.Exec(ctx, "INSERT INTO t(w) SELECT $1 FROM generate_series(1, $2::int)", w, rows)
				var pe *pgconn.PgError
				switch {
				case err == nil:
					inserted.Add(tag.RowsAffected())
				case errors.As(err, &pe) && pe.Code == "57014" && (rows > 1 || !strings.Contains(pe.Message, "statement timeout")): // query_canceled
					cancelled.Add(1)
				default:
					stop.Fail(fmt.Errorf("session %d: %w", w, err))
					return
				}
			}
		}(w, sessions[w], rows)
	}
	canceller := Connect(t, dsn)
	for i := 0; !stop.Stopped(); i++ {
		for w, pid := range pids {
			if w%3 == i%3 {
				if _, err := canceller.Exec(ctx, "SELECT pg_cancel_backend($1)", pid); err != nil {
					stop.Fail(err)
				}
			}
		}
		if i%10 == 0 {
			// As a catch-up cut short after it set the guard to 0.
			MustExec(t, canceller, "SELECT setval('snowflake_caught_up', 0)")
			cutShort.Add(1)
		}
		if cancelled.Load() >= minCancelled && inserted.Load() >= minInserted && cutShort.Load() >= minCutShort {
			stop.Now()
		} else if time.Now().After(deadline) {
			stop.Fail(fmt.Errorf("the test did not exercise cancels under load: in %v, %d statements cancelled, %d rows inserted, %d catch-ups cut short; want at least %d, %d, %d",
				2*time.Minute, cancelled.Load(), inserted.Load(), cutShort.Load(), minCancelled, minInserted, minCutShort))
		}
		time.Sleep(3 * time.Millisecond) // pacing: let statements run between cancels
	}
	wg.Wait()
	if err := stop.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows inserted, %d statements cancelled, %d catch-ups cut short", inserted.Load(), cancelled.Load(), cutShort.Load())
	if locks := HeldLocks(t, conn, pids); locks != "" {
		t.Fatalf("idle sessions still hold locks after every statement ended:\n%s", locks)
	}
	if n := QueryInt(t, conn, "SELECT count(*) FROM t"); n != inserted.Load() {
		t.Fatalf("table has %d rows, %d inserts succeeded", n, inserted.Load())
	}
	if n := QueryInt(t, conn, "SELECT count(*) - count(DISTINCT id) FROM t"); n != 0 {
		t.Fatalf("%d repeated IDs", n)
	}
	// And a cut-short catch-up is finished by the next call.
	MustExec(t, conn, "SELECT setval('snowflake_caught_up', 0)")
	MustExec(t, conn, "SET statement_timeout = '10s'")
	QueryInt(t, conn, "SELECT snowflake_next_id()")
	if guard(t, conn) == 0 {
		t.Fatalf("guard still 0 after a call: the cut-short catch-up was not finished")
	}
}

// catchUpInOpenTransactionBlocksNoOne: a session that caught the state up
// inside a transaction it keeps open holds no lock on
// snowflake_state_lock meanwhile (releases 2 to 6) and has passed the
// catch-up's turn on (release 7: it still holds the row of its own turn),
// so another session that must catch up too does so (its catch-up moves
// the guard) rather than find the turn taken and go without; nobody
// waits.
func catchUpInOpenTransactionBlocksNoOne(t *testing.T, g Generator) {
	dsn, a := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter()})
	MustExec(t, a, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	stale := makeStale(t, a)
	MustExec(t, a, "BEGIN")
	MustExec(t, a, "INSERT INTO t DEFAULT VALUES")
	if now := guard(t, a); now == stale {
		t.Fatalf("no catch-up ran in the open transaction (guard %d)", now)
	}
	b := Connect(t, dsn)
	if locks := HeldLocks(t, b, []uint32{a.PgConn().PID()}); strings.Contains(locks, "snowflake_state_lock") {
		t.Errorf("the open transaction that caught up holds:\n%s", locks)
	}
	MustExec(t, b, "SET lock_timeout = '5s'; SET statement_timeout = '10s'")
	stale = makeStale(t, b)
	MustExec(t, b, "INSERT INTO t DEFAULT VALUES")
	if now := guard(t, b); now == stale {
		t.Errorf("another session, due a catch-up while the transaction is open, did not catch up (guard %d): the lock was taken", now)
	}
	MustExec(t, a, "COMMIT")
}

// nodeOnlyOwnerChanges: a role that is not the owner can insert with the
// default, but cannot change the node (not even with EXECUTE on
// snowflake_set_node(), which then says only the owner can), set the
// state, or take or move the guard; the owner cannot set a node out of
// range (the composer's message). The IDs keep the node throughout, and
// take the owner's change.
func nodeOnlyOwnerChanges(t *testing.T, g Generator) {
	dsn, owner := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 4, Machine: 2})
	MustExec(t, owner, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	role, roleDSN := pgtest.LoginRole(t, dsn, "nextid_app", "")
	MustExec(t, owner, "GRANT INSERT, SELECT ON t TO "+role)
	MustExec(t, owner, "SELECT snowflake_grant($1)", role)
	app := Connect(t, roleDSN)
	node := func() (int64, int64) {
		t.Helper()
		d, err := tw.Decompose(snowflake.ID(QueryInt(t, app, "INSERT INTO t DEFAULT VALUES RETURNING id")))
		if err != nil {
			t.Fatal(err)
		}
		return d.Datacenter, d.Machine
	}
	if dc, m := node(); dc != 4 || m != 2 {
		t.Fatalf("app's ID has node %d/%d, want 4/2", dc, m)
	}
	refused := func(when string) {
		t.Helper()
		for _, q := range []string{
			"SELECT snowflake_set_node(9, 9)",
			"CREATE OR REPLACE FUNCTION public.snowflake_node_bits() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT 0::bigint'",
			"SELECT setval('snowflake_state', 0)",
			"SELECT nextval('snowflake_caught_up')",
			"SELECT setval('snowflake_caught_up', 0)",
			// The catch-up's turn, in the private schema: not even named.
			"SELECT setval('public_sfgen.snowflake_catch_up_key', 0)",
			"SELECT FROM public_sfgen.snowflake_catch_up_turn FOR UPDATE",
		} {
			_, err := app.Exec(context.Background(), q)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42501" {
				t.Errorf("as a non-owner %s, %s: %v; want insufficient_privilege", when, q, err)
			}
		}
	}
	refused("")
	// Even with EXECUTE granted, a non-owner gets one clear error.
	MustExec(t, owner, "GRANT EXECUTE ON FUNCTION snowflake_set_node(integer, integer) TO "+role)
	refused("with EXECUTE on snowflake_set_node()")
	_, err := app.Exec(context.Background(), "SELECT snowflake_set_node(9, 9)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "only the owner") {
		t.Errorf("non-owner with EXECUTE: %v; want insufficient_privilege saying only the owner can", err)
	}
	// Out-of-range node: the composer's words.
	_, err = owner.Exec(context.Background(), "SELECT snowflake_set_node(32, 0)")
	if want := idkit.RangeMessage(snowflake.FieldDatacenter, "32", 0, 31); !errors.As(err, &pe) || pe.Code != "22003" || pe.Message != want {
		t.Errorf("set_node(32, 0): %v; want 22003 %q", err, want)
	}
	if dc, m := node(); dc != 4 || m != 2 {
		t.Errorf("IDs now have node %d/%d, want 4/2 still: changed by the non-owner or by the out-of-range call", dc, m)
	}
	// The owner can.
	MustExec(t, owner, "SELECT snowflake_set_node(17, 29)")
	if dc, m := node(); dc != 17 || m != 29 {
		t.Errorf("after the owner's change, node %d/%d, want 17/29", dc, m)
	}
}

// nodeChangeReachesLongLivedSessions: a pooled session with a prepared
// INSERT, open before the owner changes the node, uses the new node on
// its next transaction (the plan that folded the old node is
// invalidated), and so does a session in a transaction across the change,
// from its next transaction on.
func nodeChangeReachesLongLivedSessions(t *testing.T, g Generator) {
	dsn, owner := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
	MustExec(t, owner, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	type querier interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}
	node := func(q querier) (dc, m int64, pid uint32) {
		t.Helper()
		var id int64
		if err := q.QueryRow(ctx, "INSERT INTO t DEFAULT VALUES RETURNING id, pg_backend_pid()").Scan(&id, &pid); err != nil {
			t.Fatal(err)
		}
		d, err := tw.Decompose(snowflake.ID(id))
		if err != nil {
			t.Fatal(err)
		}
		return d.Datacenter, d.Machine, pid
	}
	var pooled uint32
	fromPool := func() (int64, int64) {
		t.Helper()
		// The same pooled connection and prepared statement every time.
		dc, m, pid := node(pool)
		if pooled == 0 {
			pooled = pid
		} else if pid != pooled {
			t.Fatalf("the pool's session changed from backend %d to %d", pooled, pid)
		}
		return dc, m
	}
	for i := 0; i < 10; i++ { // past the plan cache's custom-plan tries
		if dc, m := fromPool(); dc != 1 || m != 1 {
			t.Fatalf("node %d/%d, want 1/1", dc, m)
		}
	}
	// A session in a transaction across the change: from its next
	// transaction on, the new node (within it, from the next statement that
	// takes in the invalidation, as the SQL generator's plans do).
	open := Connect(t, dsn)
	tx, err := open.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dc, m, _ := node(tx); dc != 1 || m != 1 {
		t.Fatalf("node %d/%d, want 1/1", dc, m)
	}
	MustExec(t, owner, "SELECT snowflake_set_node(17, 29)")
	if dc, m := fromPool(); dc != 17 || m != 29 {
		t.Fatalf("long-lived session uses node %d/%d after the change, want 17/29", dc, m)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if dc, m, _ := node(open); dc != 17 || m != 29 {
		t.Errorf("after its transaction, the session uses node %d/%d, want 17/29", dc, m)
	}
}

// otherLayout: the generator follows the layout it was made for (here 10
// sequence bits, 6+6 node bits, another epoch): the node in its bits, the
// time the clock's (at most sqlgen.LagLimit behind), the ID the same bit
// for bit as the schema's snowflake_compose() makes of its parts, and
// borrowing after 1,023 IDs in a millisecond.
func otherLayout(t *testing.T, g Generator) {
	l, err := snowflake.NewLayout(1600000000000, 41, 6, 6, 10)
	if err != nil {
		t.Fatal(err)
	}
	_, conn := Setup(t, g, sqlgen.Options{Layout: l, Schema: "other", Datacenter: 63, Machine: 5})
	before := NowMs(t, conn)
	id := QueryInt(t, conn, "SELECT other.snowflake_next_id()")
	after := NowMs(t, conn)
	d, err := l.Decompose(snowflake.ID(id))
	if err != nil {
		t.Fatal(err)
	}
	if lo := before - sqlgen.LagLimit.Milliseconds(); d.Datacenter != 63 || d.Machine != 5 || d.Timestamp < lo || d.Timestamp > after {
		t.Fatalf("ID %d decomposes to %+v; want node 63/5 and a time in [%d, %d]", id, d, lo, after)
	}
	if composed := QueryInt(t, conn, "SELECT other.snowflake_compose($1, 63, 5, $2)", d.Timestamp, d.Sequence); composed != id {
		t.Fatalf("snowflake_compose of %+v = %d, snowflake_next_id() made %d", d, composed, id)
	}
	// Borrowing at 1024 per millisecond.
	ms := after + 1000
	MustExec(t, conn, "SELECT setval('other.snowflake_state', $1)", ms<<10|1023)
	id = QueryInt(t, conn, "SELECT other.snowflake_next_id()")
	if d, _ := l.Decompose(snowflake.ID(id)); d.Timestamp != ms+1 || d.Sequence != 0 || d.Datacenter != 63 || d.Machine != 5 {
		t.Fatalf("after sequence 1023, got %+v; want the next millisecond, sequence 0, node 63/5", d)
	}
}

// catchesUpOncePerPeriod: in one session inserting in a loop, the fast
// path sends a call to the slow path only when a catch-up is due, and
// that call catches up: there are exactly as many slow calls as catch-ups
// (moves of the guard), and each catch-up comes at least
// sqlgen.CatchUpAfter after the one before. (When the fast path and the
// catch-up disagreed on "due", one session made a dozen slow calls per
// catch-up, each a call for nothing.) It inserts until the guard has
// moved enough times, not a fixed number of rows.
func catchesUpOncePerPeriod(t *testing.T, g Generator) {
	_, conn := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter()})
	// Each row keeps the guard as it was after its ID was made (an INSERT
	// evaluates its columns in order).
	MustExec(t, conn, "CREATE TABLE t (n bigserial, id bigint PRIMARY KEY DEFAULT snowflake_next_id(), guard bigint)")
	MustExec(t, conn, "BEGIN")
	slowBefore := g.SlowCalls(t, conn)
	const want = 10
	first := guard(t, conn)
	MustExec(t, conn, fmt.Sprintf(`DO $$
	DECLARE
		last bigint := %d;
		g bigint;
		moves int := 0;
		give_up timestamptz := clock_timestamp() + interval '60 seconds';
	BEGIN
		WHILE moves < %d AND clock_timestamp() < give_up LOOP
			INSERT INTO t(guard) VALUES (pg_sequence_last_value('snowflake_caught_up')) RETURNING guard INTO g;
			IF g <> last THEN moves := moves + 1; last := g; END IF;
		END LOOP;
	END $$`, first, want))
	slow := g.SlowCalls(t, conn) - slowBefore
	rows, err := conn.Query(context.Background(), "SELECT guard FROM t ORDER BY n")
	if err != nil {
		t.Fatal(err)
	}
	guards, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	MustExec(t, conn, "COMMIT")
	var catchUps int64
	last := first
	for i, at := range guards {
		if at == last {
			continue
		}
		catchUps++
		if at-last < sqlgen.CatchUpAfter.Milliseconds() {
			t.Errorf("row %d: a catch-up at %d ms, %d ms after the one before: want at least %v between them", i+1, at, at-last, sqlgen.CatchUpAfter)
		}
		last = at
	}
	t.Logf("%d rows over %d ms: %d slow calls, %d catch-ups", len(guards), last-first, slow, catchUps)
	if catchUps < want {
		t.Fatalf("%d catch-ups in a minute of inserts, want %d", catchUps, want)
	}
	if slow != catchUps {
		t.Errorf("%d slow calls for %d catch-ups: the fast path takes the slow path when no catch-up is due", slow, catchUps)
	}
}

// fastPathWindow: the fast path serves, without a call to the slow path,
// while the clock is before the guard, the deadline the last catch-up set
// (here a minute away, as after the clock stepped back), and never once
// the clock is past it (the IDs' time would fall behind the clock: the
// guard a millisecond ago, which release 7, reading the guard as the
// catch-up's millisecond, took for a catch-up 1 ms old, and a guard
// sqlgen.StaleAfter ago) or the catch-up was cut short (the guard at 0):
// then the call takes the slow path and catches up.
func fastPathWindow(t *testing.T, g Generator) {
	_, conn := Setup(t, g, sqlgen.Options{Layout: snowflake.Twitter()})
	QueryInt(t, conn, "SELECT snowflake_next_id()") // a first catch-up
	MustExec(t, conn, "BEGIN")
	g.SlowCalls(t, conn) // counting from here
	cases := []struct {
		name    string
		guard   func(now int64) int64
		catchUp bool
	}{
		{"recent", func(now int64) int64 { return now + 60_000 }, false},
		{"past its deadline", func(now int64) int64 { return now - 1 }, true},
		{"StaleAfter old", func(now int64) int64 { return now - sqlgen.StaleAfter.Milliseconds() }, true},
		{"cut short", func(int64) int64 { return 0 }, true},
	}
	for range 50 {
		for _, c := range cases {
			set := c.guard(NowMs(t, conn))
			MustExec(t, conn, "SELECT setval('snowflake_caught_up', $1)", set)
			before := g.SlowCalls(t, conn)
			QueryInt(t, conn, "SELECT snowflake_next_id()")
			slow, got := g.SlowCalls(t, conn)-before, guard(t, conn)
			switch {
			case !c.catchUp && (slow != 0 || got != set):
				t.Fatalf("last catch-up %s: %d slow calls, guard %d to %d; want the fast path, the guard left alone", c.name, slow, set, got)
			case c.catchUp && (slow != 1 || got <= set):
				t.Fatalf("last catch-up %s: %d slow calls, guard %d to %d; want one slow call that catches up", c.name, slow, set, got)
			}
		}
	}
	MustExec(t, conn, "COMMIT")
}
