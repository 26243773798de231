package native_test

// What only the native generator has to prove, beside the contract both
// generators meet (generatortest, run against the C function by
// TestGeneratorContract in contract_test.go): the C and SQL generators at
// once on one state, and the C code's own cases (sequences given a new
// file, the state's end, WAL under wal_level=minimal, the catch-up lock's
// waits, two schemas in one backend, privileges, locks, the node from any
// function, procedures). Every ID is decoded with the Go layout, an oracle
// independent of both. None depends on how fast the machine is.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/generatortest"
	"github.com/sfgen/sfgen/internal/sqlstate"
)

// TestNativeMixedWithSQL: the C and the SQL generator of one schema, at
// once, on its one state: sessions of each insert (single rows and bulk
// statements, some statements calling both per row) while catch-ups are
// made due at random, cut short (the guard at 0) and statements
// cancelled. No ID is ever repeated, each session's IDs increase, and
// every ID carries the node. It runs until enough of each has happened.
func TestNativeMixedWithSQL(t *testing.T) {
	dsn, conn := setup(t, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 9, Machine: 30}, true)
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY, w int NOT NULL)")
	ctx := context.Background()
	minRowsEach, minCutShort, minStale, minCancelled := int64(100000), int64(200), int64(200), int64(50)
	if testing.Short() { // a tenth of each: the same mix, sooner over
		minRowsEach, minCutShort, minStale, minCancelled = 10000, 20, 20, 5
	}
	deadline := time.Now().Add(2 * time.Minute)
	var (
		wg                         sync.WaitGroup
		stop                       generatortest.Stop
		sqlRows, cRows, mixedRows  atomic.Int64
		cutShort, stale, cancelled atomic.Int64
	)
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
			for !stop.Stopped() {
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
					stop.Fail(fmt.Errorf("session %d: %w", w, err))
					return
				}
				for _, id := range got {
					if id <= last {
						stop.Fail(fmt.Errorf("session %d: ID %d after %d", w, id, last))
						return
					}
					last = id
					if d, err := tw.Decompose(snowflake.ID(id)); err != nil || d.Datacenter != 9 || d.Machine != 30 {
						stop.Fail(fmt.Errorf("session %d: ID %d decomposes to %+v (%v), want node 9/30", w, id, d, err))
						return
					}
				}
				counter.Add(int64(len(got)))
			}
		}(w)
	}
	disruptor := connect(t, dsn)
	for i := 0; !stop.Stopped(); i++ {
		switch i % 4 {
		case 0: // a catch-up cut short after it set the guard to 0
			mustExec(t, disruptor, "SELECT setval('snowflake_caught_up', 0)")
			cutShort.Add(1)
		case 1, 3: // a catch-up due
			mustExec(t, disruptor, "SELECT setval('snowflake_caught_up', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1)", sqlgen.StaleAfter.Milliseconds())
			stale.Add(1)
		case 2:
			if _, err := disruptor.Exec(ctx, "SELECT pg_cancel_backend($1)", pids[(i/4)%sessions]); err != nil {
				stop.Fail(err)
			}
		}
		if min(sqlRows.Load(), cRows.Load(), mixedRows.Load()) >= minRowsEach && cutShort.Load() >= minCutShort &&
			stale.Load() >= minStale && cancelled.Load() >= minCancelled {
			stop.Now()
		} else if time.Now().After(deadline) {
			stop.Fail(fmt.Errorf("not enough in 2 minutes: %d SQL rows, %d C rows, %d mixed rows (want %d each), %d cut short, %d due, %d cancelled",
				sqlRows.Load(), cRows.Load(), mixedRows.Load(), minRowsEach, cutShort.Load(), stale.Load(), cancelled.Load()))
		}
		time.Sleep(2 * time.Millisecond)
	}
	wg.Wait()
	if err := stop.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows by SQL, %d by C, %d by both; %d catch-ups cut short, %d made due, %d statements cancelled",
		sqlRows.Load(), cRows.Load(), mixedRows.Load(), cutShort.Load(), stale.Load(), cancelled.Load())
	if n := queryInt(t, conn, "SELECT count(*) - count(DISTINCT id) FROM t"); n != 0 {
		t.Fatalf("%d repeated IDs", n)
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
		_, conn := setup(t, sqlgen.Options{Layout: snowflake.Twitter()}, false)
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
		_, conn := setup(t, sqlgen.Options{Layout: snowflake.Twitter()}, false)
		alterAt(t, conn, "ALTER SEQUENCE snowflake_caught_up RESTART")
		before := filenode(t, conn, "snowflake_caught_up")
		mustExec(t, conn, "BEGIN")
		mustExec(t, conn, "SELECT setval('snowflake_caught_up', $1)", nowMs(t, conn)+60_000)
		slow := slowCalls(t, conn)
		mustExec(t, conn, "SELECT snowflake_next_id(), alter_at(g) FROM generate_series(1, 300) g")
		slow = slowCalls(t, conn) - slow
		guard := queryInt(t, conn, "SELECT coalesce(pg_sequence_last_value('snowflake_caught_up'), 0)")
		mustExec(t, conn, "COMMIT")
		if after := filenode(t, conn, "snowflake_caught_up"); after == before {
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
	_, conn := setup(t, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 3, Machine: 4}, false)
	maxState := queryInt(t, conn, "SELECT seqmax FROM pg_sequence WHERE seqrelid = 'snowflake_state'::regclass")
	mustExec(t, conn, "SELECT setval('snowflake_state', $1)", maxState-2)
	mustExec(t, conn, "SELECT setval('snowflake_caught_up', $1)", nowMs(t, conn)+60_000)
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
	if testing.Short() {
		t.Skip("a server of its own at wal_level=minimal, crashed: long; run without -short")
	}
	so := library(t, tw)
	cluster := pgtest.Server(t, pgcluster.WithSetting("wal_level", "minimal"), pgcluster.WithSetting("max_wal_senders", "0"))
	dsn := cluster.DSN()
	ctx := context.Background()
	conn := connect(t, dsn)
	installNative(t, conn, sqlgen.Options{Layout: snowflake.Twitter()}, so, false)
	maxState := queryInt(t, conn, "SELECT seqmax FROM pg_sequence WHERE seqrelid = 'snowflake_state'::regclass")
	mustExec(t, conn, "SELECT setval('snowflake_caught_up', $1)", nowMs(t, conn)+600_000)
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
// catch-up's turn and a catch-up was cut short (the guard at 0), a call
// (its slow path is the SQL's snowflake_next_state()) waits for the turn
// and never uses a value, and its statement_timeout still ends it; once
// the turn is free, the next call finishes the catch-up.
func TestNativeCatchUpWaitsAndCancels(t *testing.T) {
	dsn, owner := setup(t, sqlgen.Options{Layout: snowflake.Twitter()}, false)
	app := connect(t, dsn)
	ctx := context.Background()
	queryInt(t, app, "SELECT snowflake_next_id()")
	mustExec(t, owner, "BEGIN")
	mustExec(t, owner, generatortest.TurnRow(""))
	mustExec(t, owner, "SELECT setval('snowflake_caught_up', 0)")
	mustExec(t, app, "SET statement_timeout = '400ms'")
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var id int64
	err := app.QueryRow(qctx, "SELECT snowflake_next_id()").Scan(&id)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("a call while the catch-up's turn is held and the guard is 0: %d, %v; want statement_timeout's query_canceled", id, err)
	}
	mustExec(t, owner, "COMMIT")
	mustExec(t, app, "RESET statement_timeout")
	queryInt(t, app, "SELECT snowflake_next_id()")
	if g := queryInt(t, app, "SELECT pg_sequence_last_value('snowflake_caught_up')"); g == 0 {
		t.Fatalf("after the turn was released, the guard is still 0: the call did not finish the catch-up")
	}
}

// TestNativeTwoSchemasInOneSession: one backend calling the native
// functions of two schemas (one library, one layout), statement after
// statement and in one statement, gets from each its own schema's node
// and state.
func TestNativeTwoSchemasInOneSession(t *testing.T) {
	so := library(t, snowflake.Twitter())
	conn := connect(t, pgtest.DSN(t))
	schemas := []struct {
		name   string
		dc, m  int64
		offset int64
	}{{"ids_a", 3, 4, 100}, {"ids_b", 5, 6, 2000}}
	ms := nowMs(t, conn)
	for _, s := range schemas {
		installNative(t, conn, sqlgen.Options{Layout: snowflake.Twitter(), Schema: s.name, Datacenter: s.dc, Machine: s.m}, so, false)
		// Each state at its own sequence number, the guard a minute
		// ahead: the fast path, whose next value is the state's + 1.
		mustExec(t, conn, fmt.Sprintf("SELECT setval('%[1]s.snowflake_state', $1), setval('%[1]s.snowflake_caught_up', $2)", s.name), ms<<12|s.offset, ms+60_000)
	}
	tw := snowflake.Twitter()
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
// middle of a role's transaction, passes the catch-up's turn on as soon as
// it is done and gives the caller's user back: another session takes the
// turn at once while the transaction is still open, and current_user is
// the role's in the call's own statement and in the next.
func TestNativeCatchUpGivesBackLockAndUser(t *testing.T) {
	dsn, owner := setup(t, sqlgen.Options{Layout: snowflake.Twitter()}, false)
	user, roleDSN := pgtest.LoginRole(t, dsn, "native_caller", "")
	mustExec(t, owner, "SELECT snowflake_grant($1)", user)
	app := connect(t, roleDSN)
	ctx := context.Background()
	queryInt(t, app, "SELECT snowflake_next_id()")
	mustExec(t, owner, "SET lock_timeout = '100ms'")
	for tx := 1; tx <= 3; tx++ {
		now := nowMs(t, owner)
		// The state a minute ahead (a value taken is never far behind,
		// so the try does not wait) and the last catch-up a minute old.
		mustExec(t, owner, "SELECT setval('snowflake_state', $1)", (now+60_000)<<12)
		mustExec(t, owner, "SELECT setval('snowflake_caught_up', $1)", now-60_000)
		mustExec(t, app, "BEGIN")
		var id int64
		var during string
		if err := app.QueryRow(ctx, "SELECT snowflake_next_id(), current_user").Scan(&id, &during); err != nil {
			t.Fatal(err)
		}
		if g := queryInt(t, owner, "SELECT pg_sequence_last_value('snowflake_caught_up')"); g < now {
			t.Fatalf("transaction %d: the guard is %d after the call, before the clock's %d: the call did not catch up", tx, g, now)
		}
		if _, err := owner.Exec(ctx, "BEGIN; "+generatortest.TurnRow(" NOWAIT")+"; COMMIT"); err != nil {
			t.Errorf("transaction %d: the catch-up's turn while the caller's transaction is open: %v; want it free", tx, err)
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

// TestNativeNodeFromAnyFunction: snowflake_node_bits() of another shape
// than snowflake_set_node() writes (a PL/pgSQL function, as when no node
// is set yet) is called, its errors reach the caller unchanged, and its
// value is used; replacing it takes effect from the next transaction.
func TestNativeNodeFromAnyFunction(t *testing.T) {
	dsn, conn := setup(t, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 2}, false)
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
	mustExec(t, conn, "SELECT setval('snowflake_state', $1), setval('snowflake_caught_up', $2)", ms<<12|100, ms+60000)
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
	// snowflake_set_node()'s shape from release 8 (RETURN CASE WHEN <the
	// Citus fence> IS NOT NULL THEN 'n'::bigint END) is read from the
	// body too, never called; a PL/pgSQL one is called, once in each
	// transaction, which the C code says at DEBUG1.
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { said = append(said, n.Message) }
	watched, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer watched.Close(context.Background())
	mustExec(t, watched, "SET client_min_messages = debug1")
	calls := func() (n int) {
		t.Helper()
		said = nil
		for range 2 {
			queryInt(t, watched, "SELECT snowflake_next_id()")
		}
		for _, m := range said {
			if strings.Contains(m, "snowflake_node_bits() is not of the shape") {
				n++
			}
		}
		return n
	}
	if n := calls(); n != 0 {
		t.Errorf("snowflake_set_node()'s snowflake_node_bits() called in %d of 2 transactions; want none (read from its body)", n)
	}
	mustExec(t, conn, `CREATE OR REPLACE FUNCTION public.snowflake_node_bits() RETURNS bigint LANGUAGE plpgsql STABLE AS $$
		BEGIN RETURN 9::bigint << 17; END $$`)
	if n := calls(); n != 2 {
		t.Errorf("a PL/pgSQL snowflake_node_bits() called in %d of 2 transactions; want 2 (the control)", n)
	}
}

// TestNativePrivileges: the C code checks what nextval(), pg_sequence_last_value()
// and the slow path's call check: a role without USAGE on the state, SELECT on the
// guard or EXECUTE on snowflake_next_state() gets insufficient_privilege, as
// with the SQL generator, and the privilege given back makes IDs again.
func TestNativePrivileges(t *testing.T) {
	dsn, owner := setup(t, sqlgen.Options{Layout: snowflake.Twitter()}, false)
	user, roleDSN := pgtest.LoginRole(t, dsn, "native_user", "")
	// PUBLIC's privileges, as releases 1 to 7 gave them (and an upgrade
	// keeps them where PUBLIC may insert through a default), taken away
	// and given back one at a time below.
	mustExec(t, owner, `GRANT USAGE ON SEQUENCE snowflake_state TO PUBLIC;
		GRANT SELECT ON SEQUENCE snowflake_caught_up TO PUBLIC;
		GRANT EXECUTE ON FUNCTION snowflake_next_state(), snowflake_next_id(), snowflake_next_id_c(integer) TO PUBLIC`)
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
		{"REVOKE SELECT ON SEQUENCE snowflake_caught_up FROM PUBLIC", "GRANT SELECT ON SEQUENCE snowflake_caught_up TO PUBLIC", ""},
		// The slow path, made due.
		{"REVOKE EXECUTE ON FUNCTION snowflake_next_state() FROM PUBLIC", "GRANT EXECUTE ON FUNCTION snowflake_next_state() TO PUBLIC", "SELECT setval('snowflake_caught_up', 0)"},
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
	dsn, owner := setup(t, sqlgen.Options{Layout: snowflake.Twitter()}, false)
	app := connect(t, dsn)
	ctx := context.Background()
	mustExec(t, owner, "SET lock_timeout = '100ms'")
	for tx := 1; tx <= 3; tx++ {
		// The last catch-up a minute ahead: the fast path, and no slow
		// path (whose SQL takes the same locks) in the transaction.
		mustExec(t, owner, "SELECT setval('snowflake_caught_up', $1)", nowMs(t, owner)+60_000)
		mustExec(t, app, "BEGIN")
		queryInt(t, app, "SELECT snowflake_next_id()")
		for _, seq := range []string{"snowflake_state", "snowflake_caught_up"} {
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
	_, conn := setup(t, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 2}, false)
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

// TestNativeLibraryOfAnotherLayout (issue 44): a library built for
// Discord's layout, copied over the file of a Twitter schema's library,
// makes no ID in a new backend: SQLSTATE SF302, naming the library, both
// layouts and the fix, the state unmoved. (Before, it made IDs that
// decode, in Twitter's layout, to other times, below IDs already made.)
// The backend that loaded the right file before keeps it, as the server
// keeps a loaded library.
func TestNativeLibraryOfAnotherLayout(t *testing.T) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sfnative-swap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the server, another user, reads the library
		t.Fatal(err)
	}
	// As cp to a new file and mv over the old: the backends that mapped
	// the old file keep it (writing into a library a backend has mapped
	// crashes that backend, and the server restarts every session).
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+".new", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(to+".new", to); err != nil {
			t.Fatal(err)
		}
	}
	so := filepath.Join(dir, native.PortableName(tw)+".so")
	copyFile(library(t, tw), so)
	discord := library(t, snowflake.Discord())
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	installScript(t, conn, sqlgen.Options{Layout: tw, Datacenter: 1, Machine: 2})
	if err := native.Install(ctx, conn, "public", so); err != nil {
		t.Fatal(err)
	}
	next := func(c *pgx.Conn) (int64, error) {
		var id int64
		err := c.QueryRow(ctx, "SELECT snowflake_next_id()").Scan(&id)
		return id, err
	}
	if _, err := next(connect(t, dsn)); err != nil {
		t.Fatalf("the right library, a new backend: %v", err)
	}
	state := func() int64 { return queryInt(t, conn, "SELECT last_value FROM snowflake_state") }
	copyFile(discord, so)
	before := state()
	_, err = next(connect(t, dsn))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != sqlstate.NativeLayout || !strings.Contains(pe.Message, so) ||
		!strings.Contains(pe.Message, "built for layout "+snowflake.Discord().String()) || !strings.Contains(pe.Message, "layout is "+tw.String()) ||
		!strings.Contains(pe.Hint, "sfgen install --schema public --native") {
		t.Fatalf("Discord's library over Twitter's, a new backend: %v (hint %q); want SQLSTATE %s naming the library, both layouts and the fix", err, hint(pe), sqlstate.NativeLayout)
	}
	if after := state(); after != before {
		t.Errorf("the state moved from %d to %d: an ID was made", before, after)
	}
}

func hint(pe *pgconn.PgError) string {
	if pe == nil {
		return ""
	}
	return pe.Hint
}
