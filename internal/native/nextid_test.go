package native_test

// The guarantees of snowflake_next_id() (docs/generator.md), proven again
// for the native generator: the scenarios of internal/sqlgen's
// nextid_test.go, against the C function installed over the SQL one, and
// the C and SQL generators at once on one state. Every ID is decoded with
// the Go layout, an oracle independent of both. None depends on how fast
// the machine is.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// TestNativeConcurrentUniqueAndMonotonic: 8 sessions inserting at once get
// distinct IDs, each session's IDs increase, every ID carries the node,
// and its time is the clock's: never after the clock_timestamp() its row
// reads after the ID, and at most sqlgen.LagLimit behind the one before it,
// or sqlgen.CatchUpLockWait more for a call whose slow path waited that
// long for the catch-up lock and then used the state as it was (dated
// late, as docs/generator.md says; on a loaded machine a catch-up's
// session can be descheduled that long).
func TestNativeConcurrentUniqueAndMonotonic(t *testing.T) {
	dsn, conn := setup(t, sqlgen.Options{Datacenter: 21, Machine: 12}, false)
	mustExec(t, conn, `CREATE TABLE t (before timestamptz NOT NULL DEFAULT clock_timestamp(),
		id bigint PRIMARY KEY DEFAULT snowflake_next_id(),
		after timestamptz NOT NULL DEFAULT clock_timestamp(), worker int NOT NULL)`)
	const workers, perWorker = 8, 3000
	lagLimit := (sqlgen.LagLimit + sqlgen.CatchUpLockWait).Milliseconds()
	ids := make([][]int64, workers)
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
					errs <- fmt.Errorf("worker %d: ID %d: %v", w, id, err)
					return
				}
				if d.Datacenter != 21 || d.Machine != 12 {
					errs <- fmt.Errorf("worker %d: ID %d has node %d/%d, want 21/12", w, id, d.Datacenter, d.Machine)
					return
				}
				if b, a := before.UnixMilli(), after.UnixMilli(); d.Timestamp > a || d.Timestamp < b-lagLimit {
					errs <- fmt.Errorf("worker %d: ID %d is at %d ms; the clock read %d ms before it and %d ms after: want a time in [%d, %d]",
						w, id, d.Timestamp, b, a, b-lagLimit, a)
					return
				}
				ids[w] = append(ids[w], id)
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
	var all []int64
	for w := range ids {
		all = append(all, ids[w]...)
	}
	checkUnique(t, all)
	if n := queryInt(t, conn, "SELECT count(*) FROM t"); n != workers*perWorker {
		t.Fatalf("%d rows, want %d", n, workers*perWorker)
	}
}

// TestNativeMixedWithSQL: the C and the SQL generator of one schema, at
// once, on its one state: sessions of each insert (single rows and bulk
// statements, some statements calling both per row) while catch-ups are
// made due at random, cut short (the guard at 0) and statements
// cancelled. No ID is ever repeated, each session's IDs increase, and
// every ID carries the node. It runs until enough of each has happened.
func TestNativeMixedWithSQL(t *testing.T) {
	dsn, conn := setup(t, sqlgen.Options{Datacenter: 9, Machine: 30}, true)
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY, w int NOT NULL)")
	ctx := context.Background()
	const minRowsEach, minCutShort, minStale, minCancelled = 100000, 200, 200, 50
	deadline := time.Now().Add(2 * time.Minute)
	var (
		wg                         sync.WaitGroup
		stop                       atomic.Bool
		sqlRows, cRows, mixedRows  atomic.Int64
		cutShort, stale, cancelled atomic.Int64
		errMu                      sync.Mutex
		firstErr                   error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
		stop.Store(true)
	}
	// Sessions 0-2 SQL, 3-5 C, 6-7 both in each statement; odd sessions
	// insert 200 rows a statement, even ones single rows.
	const sessions = 8
	pids := make([]uint32, sessions)
	for w := 0; w < sessions; w++ {
		c := connect(t, dsn)
		mustExec(t, c, "SET lock_timeout = '5s'; SET statement_timeout = '60s'")
		pids[w] = c.PgConn().PID()
		expr, counter := "snowflake_next_id()", &sqlRows
		switch {
		case w >= 6:
			expr, counter = "CASE WHEN g % 2 = 0 THEN snowflake_next_id() ELSE snowflake_next_id_native() END", &mixedRows
		case w >= 3:
			expr, counter = "snowflake_next_id_native()", &cRows
		}
		rows := 1 + (w%2)*199
		q := fmt.Sprintf("INSERT INTO t(id, w) SELECT %s, $1 FROM generate_series(1, $2::int) g RETURNING id", expr)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var last int64
			for !stop.Load() {
				r, err := c.Query(ctx, q, w, rows)
				var got []int64
				if err == nil {
					got, err = pgx.CollectRows(r, pgx.RowTo[int64])
				}
				var pe *pgconn.PgError
				if errors.As(err, &pe) && pe.Code == "57014" && !strings.Contains(pe.Message, "statement timeout") {
					cancelled.Add(1)
					continue
				}
				if err != nil {
					fail(fmt.Errorf("session %d: %w", w, err))
					return
				}
				for _, id := range got {
					if id <= last {
						fail(fmt.Errorf("session %d: ID %d after %d", w, id, last))
						return
					}
					last = id
					if d, err := tw.Decompose(snowflake.ID(id)); err != nil || d.Datacenter != 9 || d.Machine != 30 {
						fail(fmt.Errorf("session %d: ID %d decomposes to %+v (%v), want node 9/30", w, id, d, err))
						return
					}
				}
				counter.Add(int64(len(got)))
			}
		}(w)
	}
	disruptor := connect(t, dsn)
	for i := 0; !stop.Load(); i++ {
		switch i % 4 {
		case 0: // a catch-up cut short after it set the guard to 0
			mustExec(t, disruptor, "SELECT setval('snowflake_catch_up_guard', 0)")
			cutShort.Add(1)
		case 1, 3: // a catch-up due
			mustExec(t, disruptor, "SELECT setval('snowflake_catch_up_guard', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1)", sqlgen.StaleAfter.Milliseconds())
			stale.Add(1)
		case 2:
			if _, err := disruptor.Exec(ctx, "SELECT pg_cancel_backend($1)", pids[(i/4)%sessions]); err != nil {
				fail(err)
			}
		}
		if min(sqlRows.Load(), cRows.Load(), mixedRows.Load()) >= minRowsEach && cutShort.Load() >= minCutShort &&
			stale.Load() >= minStale && cancelled.Load() >= minCancelled {
			stop.Store(true)
		} else if time.Now().After(deadline) {
			fail(fmt.Errorf("not enough in 2 minutes: %d SQL rows, %d C rows, %d mixed rows (want %d each), %d cut short, %d due, %d cancelled",
				sqlRows.Load(), cRows.Load(), mixedRows.Load(), minRowsEach, cutShort.Load(), stale.Load(), cancelled.Load()))
		}
		time.Sleep(2 * time.Millisecond)
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("%d rows by SQL, %d by C, %d by both; %d catch-ups cut short, %d made due, %d statements cancelled",
		sqlRows.Load(), cRows.Load(), mixedRows.Load(), cutShort.Load(), stale.Load(), cancelled.Load())
	if n := queryInt(t, conn, "SELECT count(*) - count(DISTINCT id) FROM t"); n != 0 {
		t.Fatalf("%d repeated IDs", n)
	}
}

// TestNativeOneStatementUsesTheClock: within one statement each ID's time
// is clock_timestamp() at the call: the statement sleeps longer than
// sqlgen.LagLimit before each row, so each call catches up, and each ID's
// time lies between the clock read just before and just after it.
func TestNativeOneStatementUsesTheClock(t *testing.T) {
	_, conn := setup(t, sqlgen.Options{}, false)
	const rows, sleep = 5, 20 * time.Millisecond
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
	for i, g := range got {
		d, _ := tw.Decompose(snowflake.ID(g.ID))
		if before, after := g.Before.UnixMilli(), g.After.UnixMilli(); d.Timestamp < before || d.Timestamp > after {
			t.Errorf("row %d: ID %d is at %d ms, outside the clock_timestamp() around it [%d, %d]", i+1, g.ID, d.Timestamp, before, after)
		}
		if i > 0 && g.ID <= got[i-1].ID {
			t.Errorf("row %d: ID %d not above %d before it", i+1, g.ID, got[i-1].ID)
		}
	}
}

// TestNativeClockStepsBack: with the state a minute ahead of the clock (as
// after the clock stepped back a minute), IDs carry on from the highest
// one issued, on the fast path and through a catch-up alike: no error, no
// waiting for the clock.
func TestNativeClockStepsBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		guard string
	}{
		{"fast path", "clock_ms + 60000"},
		{"catch-up due", fmt.Sprintf("clock_ms - %d", sqlgen.StaleAfter.Milliseconds())},
		{"catch-up cut short", "0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, conn := setup(t, sqlgen.Options{}, false)
			last := queryInt(t, conn, "SELECT snowflake_next_id()")
			ahead := (last >> 22) + tw.Epoch() + 60000
			mustExec(t, conn, "SELECT setval('snowflake_state', $1)", ahead<<12)
			mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', "+c.guard+") FROM (SELECT trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS clock_ms) x")
			rows, err := conn.Query(context.Background(), "SELECT snowflake_next_id() FROM generate_series(1, 10000)")
			if err != nil {
				t.Fatal(err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				t.Fatal(err)
			}
			if now := nowMs(t, conn); now >= ahead {
				t.Errorf("the clock reached the state (%d ms) before the IDs were made (now %d ms): it waited", ahead, now)
			}
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

// TestNativeBorrowsTheNextMillisecond: past the last sequence of a
// millisecond the next ID takes sequence 0 of the next one at once, five
// seconds ahead of the clock, rather than waiting.
func TestNativeBorrowsTheNextMillisecond(t *testing.T) {
	_, conn := setup(t, sqlgen.Options{}, false)
	ms := nowMs(t, conn) + 5000
	mustExec(t, conn, "SELECT setval('snowflake_state', $1)", ms<<12|4093)
	rows, err := conn.Query(context.Background(), "SELECT snowflake_next_id() FROM generate_series(1, 4)")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if now := nowMs(t, conn); now > ms {
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
	if want := (snowflake.Parts{Timestamp: ms, Sequence: 4094}); got[0] != want {
		t.Fatalf("first ID %+v, want %+v", got[0], want)
	}
	if want := (snowflake.Parts{Timestamp: ms, Sequence: 4095}); got[1] != want {
		t.Fatalf("second ID %+v, want %+v", got[1], want)
	}
	for i := 2; i < len(got); i++ {
		if want := (snowflake.Parts{Timestamp: ms + 1, Sequence: int64(i - 2)}); got[i] != want {
			t.Fatalf("ID %d across a full millisecond %+v, want %+v (all: %+v)", i, got[i], want, got)
		}
	}
}

// TestNativeRollbackNeverReuses: an ID whose insert was rolled back, with
// its transaction or a savepoint, is never handed out again, whether or
// not the rolled-back work caught up, nor after a catch-up when it was
// ahead of the clock.
func TestNativeRollbackNeverReuses(t *testing.T) {
	stale := fmt.Sprintf("SELECT setval('snowflake_catch_up_guard', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - %d)", sqlgen.StaleAfter.Milliseconds())
	behind := fmt.Sprintf("SELECT setval('snowflake_state', (trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000) << 12); %s", stale)
	ahead := "SELECT setval('snowflake_state', (trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000) << 12)"
	guardQ := "SELECT pg_sequence_last_value('snowflake_catch_up_guard')"
	for _, c := range []struct {
		name       string
		setup      string
		begin      string
		rollback   string
		catchUp    bool
		beforeNext string
	}{
		{"transaction", "", "BEGIN", "ROLLBACK", false, ""},
		{"transaction that caught up", behind, "BEGIN", "ROLLBACK", true, ""},
		{"savepoint around a catch-up", behind, "BEGIN; SAVEPOINT s", "ROLLBACK TO s; COMMIT", true, ""},
		{"ahead of the clock, then a catch-up", ahead, "BEGIN", "ROLLBACK", false, stale},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, conn := setup(t, sqlgen.Options{}, false)
			mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), v int)")
			if c.setup != "" {
				mustExec(t, conn, c.setup)
			}
			guard := queryInt(t, conn, guardQ)
			mustExec(t, conn, c.begin)
			rolled := queryInt(t, conn, "INSERT INTO t(v) VALUES (1) RETURNING id")
			if g := queryInt(t, conn, guardQ); c.catchUp && g == guard {
				t.Fatalf("the rolled-back insert did not catch up (guard still %d)", g)
			}
			mustExec(t, conn, c.rollback)
			if c.beforeNext != "" {
				mustExec(t, conn, c.beforeNext)
				guard = queryInt(t, conn, guardQ)
			}
			if next := queryInt(t, conn, "INSERT INTO t(v) VALUES (2) RETURNING id"); next <= rolled {
				t.Fatalf("ID after the rollback %d <= rolled-back %d", next, rolled)
			}
			if g := queryInt(t, conn, guardQ); c.beforeNext != "" && g == guard {
				t.Fatalf("the insert after the rollback did not catch up (guard still %d)", g)
			}
		})
	}
}

// TestNativeSurvivesRestart: after a clean restart and after a crash, the
// next ID is above every ID handed out before, with the state ahead of
// the clock (so that the clock cannot put it right) and the last IDs
// taken by a transaction that wrote nothing else. It needs a server of
// its own.
func TestNativeSurvivesRestart(t *testing.T) {
	so := library(t, tw)
	cluster := pgtest.Server(t)
	dsn := cluster.DSN()
	ctx := context.Background()
	conn := connect(t, dsn)
	installNative(t, conn, sqlgen.Options{}, so, false)
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	conn.Close(ctx)
	// The crash after a checkpoint is the one nextval()'s redo-point rule
	// is for: the checkpoint writes the page with the state as it is, not
	// the value logged ahead, so the first call after it must log again.
	for _, restart := range []struct {
		name              string
		crash, checkpoint bool
	}{{"fast shutdown", false, false}, {"crash", true, false}, {"crash after a checkpoint", true, true}} {
		conn := connect(t, dsn)
		started := queryInt(t, conn, "SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint")
		mustExec(t, conn, "SELECT setval('snowflake_state', $1)", (nowMs(t, conn)+60000)<<12)
		for i := 0; i < 100; i++ {
			queryInt(t, conn, "INSERT INTO t DEFAULT VALUES RETURNING id")
		}
		after := "SELECT max(snowflake_next_id()) FROM generate_series(1, 50)"
		if restart.checkpoint {
			mustExec(t, conn, "CHECKPOINT")
			after = "SELECT max(snowflake_next_id()) FROM generate_series(1, 5)"
		}
		last := queryInt(t, conn, after)
		if d, _ := tw.Decompose(snowflake.ID(last)); d.Timestamp <= nowMs(t, conn) {
			t.Fatalf("before the %s the last ID is at %d ms, not ahead of the clock", restart.name, d.Timestamp)
		}
		conn.Close(ctx)
		if err := cluster.Restart(ctx, restart.crash); err != nil {
			t.Fatalf("restart (%s): %v", restart.name, err)
		}
		conn = connect(t, dsn)
		if s := queryInt(t, conn, "SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint"); s == started {
			t.Fatalf("the server did not restart")
		}
		var lang string
		if err := conn.QueryRow(ctx, "SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.oid = 'snowflake_next_id()'::regprocedure").Scan(&lang); err != nil || lang != "c" {
			t.Fatalf("after the %s snowflake_next_id() is %q (%v), want the C one", restart.name, lang, err)
		}
		if next := queryInt(t, conn, "SELECT snowflake_next_id()"); next <= last {
			t.Fatalf("after a %s, next ID %d <= %d before it", restart.name, next, last)
		}
		conn.Close(ctx)
	}
}

// TestNativeSequenceAlteredMidStatement: an ALTER SEQUENCE that gives the
// state or the guard a new file in the middle of a statement, in the
// transaction holding its lock (the one case that lock does not keep
// out), is seen by the very next call. The state: the rest of the
// statement's IDs come from the new file, so the statements after it
// never repeat them. The guard, restarted (NULL, as after a crash) where
// the old file said the last catch-up was recent: the next call takes the
// slow path and catches up on the new file.
func TestNativeSequenceAlteredMidStatement(t *testing.T) {
	alterAt := func(t *testing.T, conn *pgx.Conn, alter string) {
		mustExec(t, conn, `CREATE FUNCTION alter_at(g int) RETURNS int LANGUAGE plpgsql AS $$
			BEGIN
				IF g = 100 THEN EXECUTE `+"'"+strings.ReplaceAll(alter, "'", "''")+"'"+`; END IF;
				RETURN g;
			END $$`)
	}
	filenode := func(t *testing.T, conn *pgx.Conn, seq string) int64 {
		return queryInt(t, conn, "SELECT pg_relation_filenode($1)::bigint", seq)
	}
	t.Run("state", func(t *testing.T) {
		_, conn := setup(t, sqlgen.Options{}, false)
		mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY)")
		alterAt(t, conn, fmt.Sprintf("ALTER SEQUENCE snowflake_state MAXVALUE %d", queryInt(t, conn, "SELECT seqmax FROM pg_sequence WHERE seqrelid = 'snowflake_state'::regclass")))
		before := filenode(t, conn, "snowflake_state")
		mustExec(t, conn, "INSERT INTO t SELECT id FROM (SELECT snowflake_next_id() AS id, alter_at(g) FROM generate_series(1, 300) g) s")
		if after := filenode(t, conn, "snowflake_state"); after == before {
			t.Fatalf("ALTER SEQUENCE kept the state's file %d: the test needs a new one", before)
		}
		for range 3 {
			mustExec(t, conn, "INSERT INTO t SELECT snowflake_next_id() FROM generate_series(1, 300)")
		}
		if n := queryInt(t, conn, "SELECT count(*) FROM t"); n != 1200 {
			t.Fatalf("%d IDs, want 1200", n)
		}
	})
	t.Run("guard", func(t *testing.T) {
		_, conn := setup(t, sqlgen.Options{}, false)
		alterAt(t, conn, "ALTER SEQUENCE snowflake_catch_up_guard RESTART")
		before := filenode(t, conn, "snowflake_catch_up_guard")
		mustExec(t, conn, "BEGIN")
		mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', $1)", nowMs(t, conn)+60_000)
		slow := slowCalls(t, conn)
		mustExec(t, conn, "SELECT snowflake_next_id(), alter_at(g) FROM generate_series(1, 300) g")
		slow = slowCalls(t, conn) - slow
		guard := queryInt(t, conn, "SELECT coalesce(pg_sequence_last_value('snowflake_catch_up_guard'), 0)")
		mustExec(t, conn, "COMMIT")
		if after := filenode(t, conn, "snowflake_catch_up_guard"); after == before {
			t.Fatalf("ALTER SEQUENCE kept the guard's file %d: the test needs a new one", before)
		}
		if slow != 1 || guard == 0 {
			t.Fatalf("after the guard was restarted mid-statement: %d slow calls, guard %d; want one slow call that catches up", slow, guard)
		}
	})
}

// TestNativeEndOfTheState: on the fast path, the state's last values are
// the layout's last IDs (its last millisecond, sequences 4094 and 4095,
// the README formula's), and the call after them is the sequence's
// "reached maximum value" error (SQLSTATE 2200H), every time: never a
// wrapped ID, whatever the state's WAL logging ahead would overshoot.
func TestNativeEndOfTheState(t *testing.T) {
	_, conn := setup(t, sqlgen.Options{Datacenter: 3, Machine: 4}, false)
	maxState := queryInt(t, conn, "SELECT seqmax FROM pg_sequence WHERE seqrelid = 'snowflake_state'::regclass")
	mustExec(t, conn, "SELECT setval('snowflake_state', $1)", maxState-2)
	mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', $1)", nowMs(t, conn)+60_000)
	last := tw.Max(snowflake.FieldTimestamp)
	for _, seq := range []int64{4094, 4095} {
		want := (last-snowflake.TwitterEpoch)<<22 | 3<<17 | 4<<12 | seq // the README's formula
		if got := queryInt(t, conn, "SELECT snowflake_next_id()"); got != want {
			t.Fatalf("the state's last values: ID %d, want %d (time %d, node 3/4, sequence %d)", got, want, last, seq)
		}
	}
	for i := range 50 {
		var got int64
		err := conn.QueryRow(context.Background(), "SELECT snowflake_next_id()").Scan(&got)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "2200H" {
			t.Fatalf("call %d after the state's last value: %d, %v; want SQLSTATE 2200H", i+1, got, err)
		}
	}
}

// TestNativeWALAfterMinimalWALTransaction: under wal_level=minimal a
// state given a new file in a transaction needs no WAL in it (its file is
// synced at commit); in the transactions after it, of the same backend,
// it needs WAL again, with no invalidation to say so. The IDs of those
// transactions survive a crash.
func TestNativeWALAfterMinimalWALTransaction(t *testing.T) {
	so := library(t, tw)
	cluster := pgtest.Server(t, pgcluster.WithSetting("wal_level", "minimal"), pgcluster.WithSetting("max_wal_senders", "0"))
	dsn := cluster.DSN()
	ctx := context.Background()
	conn := connect(t, dsn)
	installNative(t, conn, sqlgen.Options{}, so, false)
	maxState := queryInt(t, conn, "SELECT seqmax FROM pg_sequence WHERE seqrelid = 'snowflake_state'::regclass")
	mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', $1)", nowMs(t, conn)+600_000)
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, fmt.Sprintf("ALTER SEQUENCE snowflake_state MAXVALUE %d", maxState)) // a new file, in this transaction
	mustExec(t, conn, "SELECT setval('snowflake_state', $1)", (nowMs(t, conn)+60_000)<<12)
	queryInt(t, conn, "SELECT snowflake_next_id()")
	mustExec(t, conn, "COMMIT")
	var last int64
	for range 100 {
		last = queryInt(t, conn, "SELECT snowflake_next_id()")
	}
	conn.Close(ctx)
	if err := cluster.Restart(ctx, true); err != nil {
		t.Fatalf("crash: %v", err)
	}
	conn = connect(t, dsn)
	if next := queryInt(t, conn, "SELECT snowflake_next_id()"); next <= last {
		t.Fatalf("after a crash, next ID %d <= %d before it", next, last)
	}
}

// TestNativeCatchUpWaitsAndCancels: while another session holds the
// catch-up lock and a catch-up was cut short (the guard at 0), a call
// waits for the lock (at most sqlgen.CatchUpLockWait at a time, and again)
// and never uses a value, and its statement_timeout still ends it; once
// the lock is free, the next call finishes the catch-up.
func TestNativeCatchUpWaitsAndCancels(t *testing.T) {
	dsn, owner := setup(t, sqlgen.Options{}, false)
	app := connect(t, dsn)
	ctx := context.Background()
	queryInt(t, app, "SELECT snowflake_next_id()")
	mustExec(t, owner, "BEGIN")
	mustExec(t, owner, "LOCK TABLE snowflake_state_lock IN SHARE UPDATE EXCLUSIVE MODE")
	mustExec(t, owner, "SELECT setval('snowflake_catch_up_guard', 0)")
	mustExec(t, app, "SET statement_timeout = '400ms'")
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var id int64
	err := app.QueryRow(qctx, "SELECT snowflake_next_id()").Scan(&id)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("a call while the catch-up lock is held and the guard is 0: %d, %v; want statement_timeout's query_canceled", id, err)
	}
	mustExec(t, owner, "COMMIT")
	mustExec(t, app, "RESET statement_timeout")
	queryInt(t, app, "SELECT snowflake_next_id()")
	if g := queryInt(t, app, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')"); g == 0 {
		t.Fatalf("after the lock was released, the guard is still 0: the call did not finish the catch-up")
	}
}

// TestNativeTwoSchemasInOneSession: one backend calling the native
// functions of two schemas (one library, one layout), statement after
// statement and in one statement, gets from each its own schema's node
// and state.
func TestNativeTwoSchemasInOneSession(t *testing.T) {
	so := library(t, snowflake.Twitter)
	conn := connect(t, pgtest.DSN(t))
	schemas := []struct {
		name   string
		dc, m  int64
		offset int64
	}{{"ids_a", 3, 4, 100}, {"ids_b", 5, 6, 2000}}
	ms := nowMs(t, conn)
	for _, s := range schemas {
		installNative(t, conn, sqlgen.Options{Schema: s.name, Datacenter: s.dc, Machine: s.m}, so, false)
		// Each state at its own sequence number, the guard a minute
		// ahead: the fast path, whose next value is the state's + 1.
		mustExec(t, conn, fmt.Sprintf("SELECT setval('%[1]s.snowflake_state', $1), setval('%[1]s.snowflake_catch_up_guard', $2)", s.name), ms<<12|s.offset, ms+60_000)
	}
	tw := snowflake.Twitter
	check := func(what string, id int64, i, call int) {
		t.Helper()
		s := schemas[i]
		d, err := tw.Decompose(snowflake.ID(id))
		if want := (snowflake.Parts{Timestamp: ms, Datacenter: s.dc, Machine: s.m, Sequence: s.offset + int64(call)}); err != nil || d != want {
			t.Fatalf("%s: %s.snowflake_next_id() gave %+v (%v); want %+v", what, s.name, d, err, want)
		}
	}
	calls := [2]int{}
	for range 3 {
		for i, s := range schemas {
			calls[i]++
			check("statement by statement", queryInt(t, conn, "SELECT "+s.name+".snowflake_next_id()"), i, calls[i])
		}
	}
	var a, b int64
	if err := conn.QueryRow(context.Background(), "SELECT ids_a.snowflake_next_id(), ids_b.snowflake_next_id()").Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	calls[0]++
	calls[1]++
	check("in one statement", a, 0, calls[0])
	check("in one statement", b, 1, calls[1])
}

// TestNativeCatchUpGivesBackLockAndUser: a catch-up tried without
// waiting (the last one old, the state not behind), made by a call in the
// middle of a role's transaction, releases the catch-up lock as soon as it
// is done and gives the caller's user back: another session takes the
// lock at once while the transaction is still open, and current_user is
// the role's in the call's own statement and in the next.
func TestNativeCatchUpGivesBackLockAndUser(t *testing.T) {
	dsn, owner := setup(t, sqlgen.Options{}, false)
	user, roleDSN := pgtest.LoginRole(t, dsn, "native_caller", "")
	app := connect(t, roleDSN)
	ctx := context.Background()
	queryInt(t, app, "SELECT snowflake_next_id()")
	mustExec(t, owner, "SET lock_timeout = '100ms'")
	for tx := 1; tx <= 3; tx++ {
		now := nowMs(t, owner)
		// The state a minute ahead (a value taken is never far behind,
		// so the try does not wait) and the last catch-up a minute old.
		mustExec(t, owner, "SELECT setval('snowflake_state', $1)", (now+60_000)<<12)
		mustExec(t, owner, "SELECT setval('snowflake_catch_up_guard', $1)", now-60_000)
		mustExec(t, app, "BEGIN")
		var id int64
		var during string
		if err := app.QueryRow(ctx, "SELECT snowflake_next_id(), current_user").Scan(&id, &during); err != nil {
			t.Fatal(err)
		}
		if g := queryInt(t, owner, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')"); g < now {
			t.Fatalf("transaction %d: the guard is %d after the call, before the clock's %d: the call did not catch up", tx, g, now)
		}
		if _, err := owner.Exec(ctx, "BEGIN; LOCK TABLE snowflake_state_lock IN SHARE UPDATE EXCLUSIVE MODE; COMMIT"); err != nil {
			t.Errorf("transaction %d: the catch-up lock while the caller's transaction is open: %v; want it free", tx, err)
			mustExec(t, owner, "ROLLBACK")
		}
		var after string
		if err := app.QueryRow(ctx, "SELECT current_user").Scan(&after); err != nil {
			t.Fatal(err)
		}
		if during != user || after != user {
			t.Errorf("transaction %d: current_user %q in the statement that caught up, %q in the next; want %q", tx, during, after, user)
		}
		mustExec(t, app, "COMMIT")
	}
}

// heldLocks lists the locks the sessions pids hold, one a line.
func heldLocks(t testing.TB, conn *pgx.Conn, pids []uint32) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT pid || ' ' || locktype || ' ' || coalesce(relation::regclass::text, objid::text, '') || ' ' || mode || CASE WHEN granted THEN '' ELSE ' (waiting)' END
		FROM pg_locks WHERE pid = ANY($1) ORDER BY 1`, pids)
	if err != nil {
		t.Fatal(err)
	}
	locks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(locks, "\n")
}

// TestNativeCancelNeverLeavesALock: sessions inserting while others are
// cancelled midway (statement_timeout of 1 to 3 ms on long inserts,
// pg_cancel_backend at random) and catch-ups are cut short: no
// single-row insert waits lock_timeout for a lock; once every statement
// has ended no session holds a lock; every ID is unique; and the next call
// finishes a cut-short catch-up.
func TestNativeCancelNeverLeavesALock(t *testing.T) {
	dsn, conn := setup(t, sqlgen.Options{}, false)
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), w int)")
	ctx := context.Background()
	const minCancelled, minInserted, minCutShort = 300, 10000, 30
	deadline := time.Now().Add(2 * time.Minute)
	var (
		wg                            sync.WaitGroup
		stop                          atomic.Bool
		inserted, cancelled, cutShort atomic.Int64
		errMu                         sync.Mutex
		firstErr                      error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
		stop.Store(true)
	}
	sessions := make([]*pgx.Conn, 8)
	pids := make([]uint32, len(sessions))
	for w := range sessions {
		sessions[w] = connect(t, dsn)
		timeout, rows := "'30s'", 1
		if w >= 4 {
			timeout, rows = fmt.Sprint(1+w%3), 2000
		}
		mustExec(t, sessions[w], "SET lock_timeout = '2s'; SET statement_timeout = "+timeout)
		pids[w] = sessions[w].PgConn().PID()
		wg.Add(1)
		go func(w int, c *pgx.Conn, rows int) {
			defer wg.Done()
			for !stop.Load() {
				tag, err := c.Exec(ctx, "INSERT INTO t(w) SELECT $1 FROM generate_series(1, $2::int)", w, rows)
				var pe *pgconn.PgError
				switch {
				case err == nil:
					inserted.Add(tag.RowsAffected())
				case errors.As(err, &pe) && pe.Code == "57014" && (rows > 1 || !strings.Contains(pe.Message, "statement timeout")):
					cancelled.Add(1)
				default:
					fail(fmt.Errorf("session %d: %w", w, err))
					return
				}
			}
		}(w, sessions[w], rows)
	}
	canceller := connect(t, dsn)
	for i := 0; !stop.Load(); i++ {
		for w, pid := range pids {
			if w%3 == i%3 {
				if _, err := canceller.Exec(ctx, "SELECT pg_cancel_backend($1)", pid); err != nil {
					fail(err)
				}
			}
		}
		if i%10 == 0 {
			mustExec(t, canceller, "SELECT setval('snowflake_catch_up_guard', 0)")
			cutShort.Add(1)
		}
		if cancelled.Load() >= minCancelled && inserted.Load() >= minInserted && cutShort.Load() >= minCutShort {
			stop.Store(true)
		} else if time.Now().After(deadline) {
			fail(fmt.Errorf("the test did not exercise cancels under load: %d cancelled, %d rows, %d cut short; want %d, %d, %d",
				cancelled.Load(), inserted.Load(), cutShort.Load(), minCancelled, minInserted, minCutShort))
		}
		time.Sleep(3 * time.Millisecond)
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("%d rows inserted, %d statements cancelled, %d catch-ups cut short", inserted.Load(), cancelled.Load(), cutShort.Load())
	if locks := heldLocks(t, conn, pids); locks != "" {
		t.Fatalf("idle sessions still hold locks after every statement ended:\n%s", locks)
	}
	if n := queryInt(t, conn, "SELECT count(*) FROM t"); n != inserted.Load() {
		t.Fatalf("table has %d rows, %d inserts succeeded", n, inserted.Load())
	}
	if n := queryInt(t, conn, "SELECT count(*) - count(DISTINCT id) FROM t"); n != 0 {
		t.Fatalf("%d repeated IDs", n)
	}
	mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', 0)")
	mustExec(t, conn, "SET statement_timeout = '10s'")
	queryInt(t, conn, "SELECT snowflake_next_id()")
	if g := queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')"); g == 0 {
		t.Fatalf("guard still 0 after a call: the cut-short catch-up was not finished")
	}
}

// slowCalls is how many calls of conn's backend have taken the slow path
// (the C twin of snowflake_next_state()), as the library's
// sfgen_native_slow_calls() counts them, created in pg_temp from the
// library public.snowflake_next_id() is made by.
func slowCalls(t testing.TB, conn *pgx.Conn) int64 {
	t.Helper()
	lib, err := native.InstalledLibrary(context.Background(), conn, "public")
	if err != nil || lib == "" {
		t.Fatalf("the native library of public.snowflake_next_id(): %q, %v", lib, err)
	}
	mustExec(t, conn, "CREATE OR REPLACE FUNCTION pg_temp.sfgen_native_slow_calls() RETURNS bigint LANGUAGE c AS "+pgident.QuoteLiteral(lib)+", 'sfgen_native_slow_calls'")
	return queryInt(t, conn, "SELECT pg_temp.sfgen_native_slow_calls()")
}

// TestNativeFastPathWindow: the fast path serves, without calling the
// slow path, while the last catch-up is recent (here in the future, as
// after the clock stepped back), and never once it is sqlgen.StaleAfter
// old or cut short: then the call takes the slow path and catches up.
func TestNativeFastPathWindow(t *testing.T) {
	_, conn := setup(t, sqlgen.Options{}, false)
	guard := func() int64 { return queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')") }
	queryInt(t, conn, "SELECT snowflake_next_id()")
	mustExec(t, conn, "BEGIN")
	cases := []struct {
		name    string
		guard   func(now int64) int64
		catchUp bool
	}{
		{"recent", func(now int64) int64 { return now + 60_000 }, false},
		{"StaleAfter old", func(now int64) int64 { return now - sqlgen.StaleAfter.Milliseconds() }, true},
		{"cut short", func(int64) int64 { return 0 }, true},
	}
	for range 50 {
		for _, c := range cases {
			set := c.guard(nowMs(t, conn))
			mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', $1)", set)
			before := slowCalls(t, conn)
			queryInt(t, conn, "SELECT snowflake_next_id()")
			slow, g := slowCalls(t, conn)-before, guard()
			switch {
			case !c.catchUp && (slow != 0 || g != set):
				t.Fatalf("last catch-up %s: %d slow calls, guard %d to %d; want the fast path, the guard left alone", c.name, slow, set, g)
			case c.catchUp && (slow != 1 || g <= set):
				t.Fatalf("last catch-up %s: %d slow calls, guard %d to %d; want one slow call that catches up", c.name, slow, set, g)
			}
		}
	}
	mustExec(t, conn, "COMMIT")
}

// TestNativeNodeOnlyOwnerChanges: a role that is not the owner inserts
// with the native default but cannot change the node, set the state or
// move the guard, even with EXECUTE on snowflake_set_node(); the IDs keep
// the node throughout.
func TestNativeNodeOnlyOwnerChanges(t *testing.T) {
	dsn, owner := setup(t, sqlgen.Options{Datacenter: 4, Machine: 2}, false)
	mustExec(t, owner, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	role, roleDSN := pgtest.LoginRole(t, dsn, "native_app", "")
	mustExec(t, owner, "GRANT INSERT, SELECT ON t TO "+role)
	app := connect(t, roleDSN)
	node := func() (int64, int64) {
		t.Helper()
		d, err := tw.Decompose(snowflake.ID(queryInt(t, app, "INSERT INTO t DEFAULT VALUES RETURNING id")))
		if err != nil {
			t.Fatal(err)
		}
		return d.Datacenter, d.Machine
	}
	if dc, m := node(); dc != 4 || m != 2 {
		t.Fatalf("app's ID has node %d/%d, want 4/2", dc, m)
	}
	mustExec(t, owner, "GRANT EXECUTE ON FUNCTION snowflake_set_node(integer, integer) TO "+role)
	for _, q := range []string{
		"SELECT snowflake_set_node(9, 9)",
		"CREATE OR REPLACE FUNCTION public.snowflake_node_bits() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT 0::bigint'",
		"SELECT setval('snowflake_state', 0)",
		"SELECT setval('snowflake_catch_up_guard', 0)",
	} {
		_, err := app.Exec(context.Background(), q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("as a non-owner, %s: %v; want insufficient_privilege", q, err)
		}
	}
	if dc, m := node(); dc != 4 || m != 2 {
		t.Errorf("IDs now have node %d/%d, want 4/2 still", dc, m)
	}
	// The owner can.
	mustExec(t, owner, "SELECT snowflake_set_node(17, 29)")
	if dc, m := node(); dc != 17 || m != 29 {
		t.Errorf("after the owner's change, node %d/%d, want 17/29", dc, m)
	}
}

// TestNativeNodeChangeReachesLongLivedSessions: a pooled session with a
// prepared INSERT, open before the owner changes the node, and a session
// in a transaction across the change, use the new node from their next
// transaction on.
func TestNativeNodeChangeReachesLongLivedSessions(t *testing.T) {
	dsn, owner := setup(t, sqlgen.Options{Datacenter: 1, Machine: 1}, false)
	mustExec(t, owner, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
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
	node := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (int64, int64) {
		t.Helper()
		var id int64
		if err := q.QueryRow(ctx, "INSERT INTO t DEFAULT VALUES RETURNING id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		d, _ := tw.Decompose(snowflake.ID(id))
		return d.Datacenter, d.Machine
	}
	for i := 0; i < 10; i++ {
		if dc, m := node(pool); dc != 1 || m != 1 {
			t.Fatalf("node %d/%d, want 1/1", dc, m)
		}
	}
	// A session in a transaction across the change: from its next
	// transaction on, the new node (within it, from the next statement that
	// takes in the invalidation, as the SQL generator's plans do).
	open := connect(t, dsn)
	tx, err := open.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dc, m := node(tx); dc != 1 || m != 1 {
		t.Fatalf("node %d/%d, want 1/1", dc, m)
	}
	mustExec(t, owner, "SELECT snowflake_set_node(17, 29)")
	if dc, m := node(pool); dc != 17 || m != 29 {
		t.Fatalf("long-lived session uses node %d/%d after the change, want 17/29", dc, m)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if dc, m := node(open); dc != 17 || m != 29 {
		t.Errorf("after its transaction, the session uses node %d/%d, want 17/29", dc, m)
	}
}

// TestNativeNodeFromAnyFunction: snowflake_node_bits() of another shape
// than snowflake_set_node() writes (a PL/pgSQL function, as when no node
// is set yet) is called, its errors reach the caller unchanged, and its
// value is used; replacing it takes effect from the next transaction.
func TestNativeNodeFromAnyFunction(t *testing.T) {
	_, conn := setup(t, sqlgen.Options{Datacenter: 1, Machine: 2}, false)
	mustExec(t, conn, `CREATE OR REPLACE FUNCTION public.snowflake_node_bits() RETURNS bigint LANGUAGE plpgsql STABLE AS $$
		BEGIN RAISE EXCEPTION USING ERRCODE = 'SF201', MESSAGE = 'sfgen: no node is set for schema public'; END $$`)
	_, err := conn.Exec(context.Background(), "SELECT snowflake_next_id()")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "SF201" || pe.Message != "sfgen: no node is set for schema public" {
		t.Fatalf("with a node_bits() that raises: %v; want its SF201 error", err)
	}
	// Bits outside the node's (the sequence's, the timestamp's) are masked
	// off, as the SQL's cast to bit(10) does: the ID is the state's and
	// the node's exactly. (The guard a minute ahead: the fast path.)
	mustExec(t, conn, `CREATE OR REPLACE FUNCTION public.snowflake_node_bits() RETURNS bigint LANGUAGE plpgsql STABLE AS $$
		BEGIN RETURN (5::bigint << 17) | (6::bigint << 12) | 4095 | (1::bigint << 40); END $$`)
	ms := nowMs(t, conn)
	mustExec(t, conn, "SELECT setval('snowflake_state', $1), setval('snowflake_catch_up_guard', $2)", ms<<12|100, ms+60000)
	d, err := tw.Decompose(snowflake.ID(queryInt(t, conn, "SELECT snowflake_next_id()")))
	if want := (snowflake.Parts{Timestamp: ms, Datacenter: 5, Machine: 6, Sequence: 101}); err != nil || d != want {
		t.Fatalf("with a PL/pgSQL node_bits() of 5/6 and other bits set: %+v, %v; want %+v (the other bits masked off)", d, err, want)
	}
	// A function of another shape is called once in every transaction: a
	// node it reads from a table changes with the table, from the next
	// transaction on, with no change of the function.
	mustExec(t, conn, "CREATE TABLE node_src (bits bigint)")
	mustExec(t, conn, "INSERT INTO node_src VALUES ((3::bigint << 17) | (4::bigint << 12))")
	mustExec(t, conn, `CREATE OR REPLACE FUNCTION public.snowflake_node_bits() RETURNS bigint LANGUAGE plpgsql STABLE AS $$
		BEGIN RETURN (SELECT bits FROM public.node_src); END $$`)
	for _, node := range [][2]int64{{3, 4}, {11, 12}, {13, 14}} {
		mustExec(t, conn, "UPDATE node_src SET bits = $1", node[0]<<17|node[1]<<12)
		if d, _ := tw.Decompose(snowflake.ID(queryInt(t, conn, "SELECT snowflake_next_id()"))); d.Datacenter != node[0] || d.Machine != node[1] {
			t.Fatalf("with node_bits() reading %d/%d from a table: node %d/%d", node[0], node[1], d.Datacenter, d.Machine)
		}
	}
	// The shape snowflake_set_node() writes, read from the body, masked too.
	mustExec(t, conn, fmt.Sprintf("CREATE OR REPLACE FUNCTION public.snowflake_node_bits() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT %d::bigint'",
		int64(7)<<17|int64(8)<<12|4095|int64(1)<<40))
	mustExec(t, conn, "SELECT setval('snowflake_state', $1)", ms<<12|200)
	d, err = tw.Decompose(snowflake.ID(queryInt(t, conn, "SELECT snowflake_next_id()")))
	if want := (snowflake.Parts{Timestamp: ms, Datacenter: 7, Machine: 8, Sequence: 201}); err != nil || d != want {
		t.Fatalf("with an SQL node_bits() of 7/8 and other bits set: %+v, %v; want %+v", d, err, want)
	}
	mustExec(t, conn, "SELECT snowflake_set_node(9, 10)")
	if d, _ := tw.Decompose(snowflake.ID(queryInt(t, conn, "SELECT snowflake_next_id()"))); d.Datacenter != 9 || d.Machine != 10 {
		t.Fatalf("after snowflake_set_node(9, 10): node %d/%d", d.Datacenter, d.Machine)
	}
}

// TestNativeOtherLayout: the C code follows the layout it was built for
// (10 sequence bits, 6+6 node bits, another epoch): the node in its bits,
// the time the clock's, and borrowing after 1,023 IDs in a millisecond.
func TestNativeOtherLayout(t *testing.T) {
	l, err := snowflake.NewLayout(1600000000000, 41, 6, 6, 10)
	if err != nil {
		t.Fatal(err)
	}
	_, conn := setup(t, sqlgen.Options{Layout: l, Schema: "other", Datacenter: 63, Machine: 5}, false)
	before := nowMs(t, conn)
	id := queryInt(t, conn, "SELECT other.snowflake_next_id()")
	after := nowMs(t, conn)
	d, err := l.Decompose(snowflake.ID(id))
	if err != nil {
		t.Fatal(err)
	}
	if lo := before - sqlgen.LagLimit.Milliseconds(); d.Datacenter != 63 || d.Machine != 5 || d.Timestamp < lo || d.Timestamp > after {
		t.Fatalf("ID %d decomposes to %+v; want node 63/5 and a time in [%d, %d]", id, d, lo, after)
	}
	// Its SQL twin agrees bit for bit on the layout.
	if sql := queryInt(t, conn, "SELECT other.snowflake_compose($1, 63, 5, $2)", d.Timestamp, d.Sequence); sql != id {
		t.Fatalf("snowflake_compose of %+v = %d, the C function made %d", d, sql, id)
	}
	ms := after + 1000
	mustExec(t, conn, "SELECT setval('other.snowflake_state', $1)", ms<<10|1023)
	id = queryInt(t, conn, "SELECT other.snowflake_next_id()")
	if d, _ := l.Decompose(snowflake.ID(id)); d.Timestamp != ms+1 || d.Sequence != 0 {
		t.Fatalf("after sequence 1023, got %+v; want the next millisecond, sequence 0", d)
	}
}

// TestNativePrivileges: the C code checks what nextval(), pg_sequence_last_value()
// and the slow path's call check: a role without USAGE on the state, SELECT on the
// guard or EXECUTE on snowflake_next_state() gets insufficient_privilege, as
// with the SQL generator, and the privilege given back makes IDs again.
func TestNativePrivileges(t *testing.T) {
	dsn, owner := setup(t, sqlgen.Options{}, false)
	user, roleDSN := pgtest.LoginRole(t, dsn, "native_user", "")
	app := connect(t, roleDSN)
	queryInt(t, app, "SELECT snowflake_next_id()")
	// Through a role: USAGE on the state only as a member of it, and
	// leaving the role (a change of pg_auth_members alone) takes it away.
	group := pgtest.Role(t, dsn, "native_group", "NOLOGIN")
	mustExec(t, owner, "GRANT USAGE ON SEQUENCE snowflake_state TO "+group)
	mustExec(t, owner, "GRANT "+group+" TO "+user)
	mustExec(t, owner, "REVOKE USAGE ON SEQUENCE snowflake_state FROM PUBLIC")
	queryInt(t, app, "SELECT snowflake_next_id()")
	mustExec(t, owner, "REVOKE "+group+" FROM "+user)
	if _, err := app.Exec(context.Background(), "SELECT snowflake_next_id()"); !isInsufficientPrivilege(err) {
		t.Errorf("after REVOKE %s FROM %s: %v; want insufficient_privilege", group, user, err)
	}
	// Another user in the same session (SET ROLE): checked as that user.
	queryInt(t, owner, "SELECT snowflake_next_id()")
	mustExec(t, owner, "SET ROLE "+user)
	if _, err := owner.Exec(context.Background(), "SELECT snowflake_next_id()"); !isInsufficientPrivilege(err) {
		t.Errorf("after SET ROLE %s in a session that called it as the owner: %v; want insufficient_privilege", user, err)
	}
	mustExec(t, owner, "RESET ROLE")
	mustExec(t, owner, "GRANT USAGE ON SEQUENCE snowflake_state TO PUBLIC")
	queryInt(t, app, "SELECT snowflake_next_id()")
	for _, c := range []struct{ revoke, grant, prepare string }{
		{"REVOKE USAGE ON SEQUENCE snowflake_state FROM PUBLIC", "GRANT USAGE ON SEQUENCE snowflake_state TO PUBLIC", ""},
		{"REVOKE SELECT ON SEQUENCE snowflake_catch_up_guard FROM PUBLIC", "GRANT SELECT ON SEQUENCE snowflake_catch_up_guard TO PUBLIC", ""},
		// The slow path, made due.
		{"REVOKE EXECUTE ON FUNCTION snowflake_next_state() FROM PUBLIC", "GRANT EXECUTE ON FUNCTION snowflake_next_state() TO PUBLIC", "SELECT setval('snowflake_catch_up_guard', 0)"},
	} {
		mustExec(t, owner, c.revoke)
		if c.prepare != "" {
			mustExec(t, owner, c.prepare)
		}
		if _, err := app.Exec(context.Background(), "SELECT snowflake_next_id()"); !isInsufficientPrivilege(err) {
			t.Errorf("after %s: %v; want insufficient_privilege", c.revoke, err)
		}
		mustExec(t, owner, c.grant)
		queryInt(t, app, "SELECT snowflake_next_id()")
	}
}

// TestNativeHoldsTheSequencesLocks: in every transaction that calls it,
// the first and the ones after (whose calls use what the backend looked up
// before), the native function holds the locks nextval() and
// pg_sequence_last_value() hold to the transaction's end, so that no
// ALTER SEQUENCE gives the state or the guard a new file under it.
func TestNativeHoldsTheSequencesLocks(t *testing.T) {
	dsn, owner := setup(t, sqlgen.Options{}, false)
	app := connect(t, dsn)
	ctx := context.Background()
	mustExec(t, owner, "SET lock_timeout = '100ms'")
	for tx := 1; tx <= 3; tx++ {
		// The last catch-up a minute ahead: the fast path, and no slow
		// path (whose SQL takes the same locks) in the transaction.
		mustExec(t, owner, "SELECT setval('snowflake_catch_up_guard', $1)", nowMs(t, owner)+60_000)
		mustExec(t, app, "BEGIN")
		queryInt(t, app, "SELECT snowflake_next_id()")
		for _, seq := range []string{"snowflake_state", "snowflake_catch_up_guard"} {
			_, err := owner.Exec(ctx, fmt.Sprintf("ALTER SEQUENCE %s MAXVALUE %d", seq,
				queryInt(t, owner, "SELECT seqmax FROM pg_sequence WHERE seqrelid = $1::regclass", seq)))
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "55P03" {
				t.Errorf("transaction %d: ALTER SEQUENCE %s while a session that called snowflake_next_id() is in its transaction: %v; want lock_not_available", tx, seq, err)
			}
		}
		mustExec(t, app, "COMMIT")
	}
}

func isInsufficientPrivilege(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42501"
}

// TestNativeProcedureAcrossCommits: in a procedure that commits between
// calls (each transaction's first call looks everything up again), every
// ID is above the one before, and a node the procedure sets is in the IDs
// of its next transaction.
func TestNativeProcedureAcrossCommits(t *testing.T) {
	_, conn := setup(t, sqlgen.Options{Datacenter: 1, Machine: 2}, false)
	mustExec(t, conn, "CREATE TABLE t (n int PRIMARY KEY, id bigint NOT NULL)")
	mustExec(t, conn, `CREATE PROCEDURE p() LANGUAGE plpgsql AS $$
		DECLARE v bigint;
		BEGIN
			FOR i IN 1..6 LOOP
				v := snowflake_next_id();
				INSERT INTO t VALUES (i, v);
				IF i = 3 THEN PERFORM snowflake_set_node(13, 14); END IF;
				COMMIT;
			END LOOP;
		END $$`)
	mustExec(t, conn, "CALL p()")
	rows, err := conn.Query(context.Background(), "SELECT id FROM t ORDER BY n")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		d, _ := tw.Decompose(snowflake.ID(id))
		want := [2]int64{1, 2}
		if i >= 3 {
			want = [2]int64{13, 14}
		}
		if [2]int64{d.Datacenter, d.Machine} != want || i > 0 && id <= ids[i-1] {
			t.Errorf("call %d: ID %d of node %d/%d; want node %v, above the one before", i+1, id, d.Datacenter, d.Machine, want)
		}
	}
}

// TestNativeCatchesUpOncePerPeriod: in one session inserting in a loop,
// the C fast path sends a call to the slow path only when a catch-up is
// due, and that call catches up: as many slow calls as catch-ups (moves of
// the guard), each at least sqlgen.CatchUpAfter after the one before.
func TestNativeCatchesUpOncePerPeriod(t *testing.T) {
	_, conn := setup(t, sqlgen.Options{}, false)
	mustExec(t, conn, "CREATE TABLE t (n bigserial, id bigint PRIMARY KEY DEFAULT snowflake_next_id(), guard bigint)")
	before := slowCalls(t, conn)
	mustExec(t, conn, "BEGIN")
	const want = 10
	first := queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')")
	mustExec(t, conn, fmt.Sprintf(`DO $$
	DECLARE
		last bigint := %d;
		g bigint;
		moves int := 0;
		give_up timestamptz := clock_timestamp() + interval '60 seconds';
	BEGIN
		WHILE moves < %d AND clock_timestamp() < give_up LOOP
			INSERT INTO t(guard) VALUES (pg_sequence_last_value('snowflake_catch_up_guard')) RETURNING guard INTO g;
			IF g <> last THEN moves := moves + 1; last := g; END IF;
		END LOOP;
	END $$`, first, want))
	slow := slowCalls(t, conn) - before
	rows, err := conn.Query(context.Background(), "SELECT guard FROM t ORDER BY n")
	if err != nil {
		t.Fatal(err)
	}
	guards, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, "COMMIT")
	var catchUps int64
	last := first
	for i, g := range guards {
		if g == last {
			continue
		}
		catchUps++
		if g-last < sqlgen.CatchUpAfter.Milliseconds() {
			t.Errorf("row %d: a catch-up at %d ms, %d ms after the one before: want at least %v between them", i+1, g, g-last, sqlgen.CatchUpAfter)
		}
		last = g
	}
	t.Logf("%d rows over %d ms: %d slow calls, %d catch-ups", len(guards), last-first, slow, catchUps)
	if catchUps < want {
		t.Fatalf("%d catch-ups in a minute of inserts, want %d", catchUps, want)
	}
	if slow != catchUps {
		t.Errorf("%d slow calls for %d catch-ups: the fast path takes the slow path when no catch-up is due", slow, catchUps)
	}
}
