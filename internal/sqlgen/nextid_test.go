package sqlgen_test

// Tests of snowflake_next_id() against a real PostgreSQL 15: each proves
// one of its guarantees.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

func connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// installScript renders the plain script for o and runs it on conn.
func installScript(t testing.TB, conn *pgx.Conn, o sqlgen.Options) {
	t.Helper()
	script, err := sqlgen.Script(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), string(script)); err != nil {
		t.Fatalf("install: %v", err)
	}
}

func queryInt(t testing.TB, conn *pgx.Conn, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// nowMs is the server's clock_timestamp() in Unix milliseconds, floored.
func nowMs(t testing.TB, conn *pgx.Conn) int64 {
	return queryInt(t, conn, "SELECT trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint")
}

func mustExec(t testing.TB, conn *pgx.Conn, q string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// checkUnique fails t when ids has a repeat.
func checkUnique(t testing.TB, ids []int64) {
	t.Helper()
	s := append([]int64(nil), ids...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	dups := 0
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			if dups < 5 {
				t.Errorf("ID %d handed out twice", s[i])
			}
			dups++
		}
	}
	if dups > 0 {
		t.Errorf("%d repeated IDs among %d", dups, len(ids))
	}
}

var tw = snowflake.Twitter

// findPsql returns a psql that runs: the one on PATH, or the one beside
// the server binaries pgcluster would use; or why there is none.
func findPsql() (string, error) {
	var candidates, tried []string
	if p, err := exec.LookPath("psql"); err == nil {
		candidates = append(candidates, p)
	} else {
		tried = append(tried, "PATH: "+err.Error())
	}
	if dir, err := pgcluster.FindBinDir(""); err == nil {
		candidates = append(candidates, filepath.Join(dir, "psql"))
	} else {
		tried = append(tried, err.Error())
	}
	for _, p := range candidates {
		out, err := exec.Command(p, "--version").CombinedOutput()
		if err == nil {
			return p, nil
		}
		tried = append(tried, fmt.Sprintf("%s --version: %v: %s", p, err, strings.TrimSpace(string(out))))
	}
	return "", fmt.Errorf("no psql that runs (%s)", strings.Join(tried, "; "))
}

// TestNextIDScriptRerunKeepsNodeAndState: the plain script runs twice on
// one database, and the second run keeps the node that was set after the
// first and does not move the state back. It runs the script as psql -f
// does, where a psql is at hand, and always as one simple-protocol query
// (all that a client with no psql, such as docker-compose's test service,
// can do).
func TestNextIDScriptRerunKeepsNodeAndState(t *testing.T) {
	script, err := sqlgen.Script(sqlgen.Options{Datacenter: 3, Machine: 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, runner := range []struct {
		name string
		run  func(t *testing.T, dsn string)
	}{
		{"simple query", func(t *testing.T, dsn string) {
			t.Helper()
			c, err := pgx.Connect(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			if _, err := c.Exec(context.Background(), string(script)); err != nil {
				t.Fatalf("script: %v", err)
			}
		}},
		{"psql -f", func(t *testing.T, dsn string) {
			t.Helper()
			psql, err := findPsql()
			if err != nil {
				t.Skipf("%v: the script is run as one query in the other subtest", err)
			}
			path := filepath.Join(t.TempDir(), "snowflake.sql")
			if err := os.WriteFile(path, script, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", path).CombinedOutput()
			if err != nil {
				t.Fatalf("psql -f: %v\n%s", err, out)
			}
		}},
	} {
		t.Run(runner.name, func(t *testing.T) {
			dsn := pgtest.DSN(t)
			runner.run(t, dsn)
			conn := connect(t, dsn)
			var dc, m int
			if err := conn.QueryRow(context.Background(), "SELECT datacenter_id, machine_id FROM snowflake_node()").Scan(&dc, &m); err != nil || dc != 3 || m != 7 {
				t.Fatalf("after install, node = %d/%d, %v; want 3/7", dc, m, err)
			}
			mustExec(t, conn, "SELECT snowflake_set_node(30, 1)")
			// Seed the state a minute ahead, as if many IDs had been borrowed.
			ahead := (nowMs(t, conn) + 60000) << 12
			mustExec(t, conn, "SELECT setval('snowflake_state', $1)", ahead)
			before := queryInt(t, conn, "SELECT snowflake_next_id()")
			runner.run(t, dsn)
			conn2 := connect(t, dsn)
			if err := conn2.QueryRow(context.Background(), "SELECT datacenter_id, machine_id FROM snowflake_node()").Scan(&dc, &m); err != nil || dc != 30 || m != 1 {
				t.Fatalf("after the second run, node = %d/%d, %v; want 30/1 kept", dc, m, err)
			}
			after := queryInt(t, conn2, "SELECT snowflake_next_id()")
			if after <= before {
				t.Fatalf("after the second run, next ID %d <= %d from before it: state was reset", after, before)
			}
			id, _ := tw.Decompose(snowflake.ID(after))
			if id.Datacenter != 30 || id.Machine != 1 {
				t.Fatalf("ID %d has node %d/%d, want 30/1", after, id.Datacenter, id.Machine)
			}
		})
	}
}

// TestNextIDMigrationDownRemovesWhatUpCreated: goose Up then Down leaves
// the schema with exactly the objects it had before (but the version
// table), and Up again works.
func TestNextIDMigrationDownRemovesWhatUpCreated(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE SCHEMA ids; CREATE TABLE ids.keep(x int)"); err != nil {
		t.Fatal(err)
	}
	objects := func() []string {
		t.Helper()
		rows, err := db.Query(`
			SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = 'ids'::regnamespace
			UNION ALL
			SELECT c.relkind::text || ' ' || c.relname FROM pg_class c
			WHERE c.relnamespace = 'ids'::regnamespace AND c.relname NOT LIKE 'sfgen_db_version%'
			ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			rows.Scan(&s)
			out = append(out, s)
		}
		return out
	}
	before := objects()
	o := sqlgen.Options{Schema: "ids", Datacenter: 2, Machine: 5}
	{
		// install.Apply's goose provider closes the *sql.DB it is given.
		idb, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := install.Apply(ctx, idb, o); err != nil {
			t.Fatal(err)
		}
		idb.Close()
	}
	var id int64
	if err := db.QueryRow("SELECT ids.snowflake_next_id()").Scan(&id); err != nil {
		t.Fatalf("after Up: %v", err)
	}
	if d, _ := tw.Decompose(snowflake.ID(id)); d.Datacenter != 2 || d.Machine != 5 {
		t.Fatalf("ID from the migration has node %d/%d, want 2/5", d.Datacenter, d.Machine)
	}
	up := objects()
	for _, want := range []string{"function ids.snowflake_next_id()", "function ids.snowflake_node_bits()", "S snowflake_state", "S snowflake_state_guard", "S snowflake_catch_up_guard"} {
		if !contains(up, want) {
			t.Errorf("after Up, %q is missing from %q", want, up)
		}
	}
	fsys, err := install.FS(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithTableName("ids.sfgen_db_version"), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down: %v", err)
	}
	if after := objects(); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("after Down the schema has\n%s\nwant what it had before Up:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestNextIDConcurrentUniqueAndMonotonic: 8 sessions inserting at once
// (through a primary key) get distinct IDs, each session's IDs increase,
// every ID carries the node, and its time is the clock's, floored, at
// most a few milliseconds behind.
func TestNextIDConcurrentUniqueAndMonotonic(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	installScript(t, conn, sqlgen.Options{Datacenter: 21, Machine: 12})
	mustExec(t, conn, `CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(),
		at timestamptz NOT NULL DEFAULT clock_timestamp(), worker int)`)
	const workers, perWorker = 8, 3000
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
				if err := c.QueryRow(ctx, "INSERT INTO t(worker) VALUES ($1) RETURNING id", w).Scan(&id); err != nil {
					errs <- err
					return
				}
				if n := len(ids[w]); n > 0 && id <= ids[w][n-1] {
					errs <- fmt.Errorf("worker %d: ID %d after %d", w, id, ids[w][n-1])
					return
				}
				ids[w] = append(ids[w], id)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var all []int64
	for _, s := range ids {
		all = append(all, s...)
	}
	checkUnique(t, all)
	if n := queryInt(t, conn, "SELECT count(*) FROM t"); n != workers*perWorker {
		t.Fatalf("%d rows, want %d", n, workers*perWorker)
	}
	// Time: never after the row's clock_timestamp() (so floored, not
	// rounded, and not ahead), and close behind it: the state may trail
	// the clock by up to 8 ms before it is moved; a backend descheduled
	// between the ID and the row's clock_timestamp() adds to the gap.
	var ahead, p99, maxLag int64
	if err := conn.QueryRow(context.Background(), `
		SELECT count(*) FILTER (WHERE lag < 0),
		       percentile_disc(0.99) WITHIN GROUP (ORDER BY lag), max(lag)
		FROM (SELECT trunc(extract(epoch FROM at) * 1000)::bigint - (snowflake_decompose(id)).timestamp_ms AS lag
		      FROM t) x`).Scan(&ahead, &p99, &maxLag); err != nil {
		t.Fatal(err)
	}
	if ahead > 0 {
		t.Errorf("%d IDs have a time after their row's clock_timestamp()", ahead)
	}
	if p99 > 10 {
		t.Errorf("99th percentile of the lag behind the row's clock_timestamp() is %d ms", p99)
	}
	t.Logf("lag p99 %d ms, max %d ms over %d IDs", p99, maxLag, len(all))
	if n := queryInt(t, conn, "SELECT count(*) FROM t WHERE (id >> 17) & 31 <> 21 OR (id >> 12) & 31 <> 12"); n != 0 {
		t.Errorf("%d IDs do not carry node 21/12", n)
	}
}

// TestNextIDOneStatementUsesTheClock: within one statement each ID's time
// is clock_timestamp() at the call, not the statement's or the
// transaction's start (statement_timestamp(), now()), which would give
// every row of a long statement the same millisecond. The statement sleeps
// before each row, longer than sqlgen.LagLimit, so that each call finds
// the state behind the clock and catches up, and makes one ID a row: far
// too few for borrowing (4,096 IDs a millisecond) to move the time on.
// Each ID's time is then between clock_timestamp() read just before and
// just after it, and the IDs span at least the time slept.
func TestNextIDOneStatementUsesTheClock(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{})
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
	ms := func(i int) int64 { return (got[i].ID >> 22) + tw.Epoch() }
	for i, g := range got {
		before, after := g.Before.UnixMilli(), g.After.UnixMilli()
		if m := ms(i); m < before || m > after {
			t.Errorf("row %d: ID %d is at %d ms, outside the clock_timestamp() around it [%d, %d]: its time is not the clock's at the call", i+1, g.ID, m, before, after)
		}
		if i > 0 && g.ID <= got[i-1].ID {
			t.Errorf("row %d: ID %d not above %d before it", i+1, g.ID, got[i-1].ID)
		}
	}
	if span, slept := ms(rows-1)-ms(0), int64(rows-1)*sleep.Milliseconds(); span < slept {
		t.Errorf("IDs of one statement span %d ms, less than the %d ms slept between them: their time does not come from clock_timestamp()", span, slept)
	}
}

// TestNextIDClockStepsBack: with the state a minute ahead of the clock (as
// after the clock stepped back a minute), IDs carry on from the highest
// one issued, at once: no error, no waiting.
func TestNextIDClockStepsBack(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{})
	last := queryInt(t, conn, "SELECT snowflake_next_id()")
	lastMs := (last >> 22) + tw.Epoch()
	ahead := lastMs + 60000
	mustExec(t, conn, "SELECT setval('snowflake_state', $1)", ahead<<12)
	start := time.Now()
	rows, err := conn.Query(context.Background(), "SELECT snowflake_next_id() FROM generate_series(1, 10000)")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("10,000 IDs took %v with the clock behind the state: it waited", el)
	}
	// Straight on from the seeded state, 4096 a millisecond, whatever the
	// clock says (a catch-up may skip a value, never go back).
	for i, id := range ids {
		ms := (id >> 22) + tw.Epoch()
		if ms < ahead || ms > ahead+3 || i > 0 && id <= ids[i-1] {
			t.Fatalf("ID %d after the step back is at %d ms (seeded state at %d): not continuing from the highest", i, ms, ahead)
		}
	}
	if ids[0] <= last {
		t.Fatalf("first ID after the step back %d <= %d before it", ids[0], last)
	}
}

// TestNextIDBorrowsTheNextMillisecond: past 4,095 IDs in a millisecond the
// next ID takes sequence 0 of the next millisecond at once (borrows it)
// rather than waiting for the clock.
func TestNextIDBorrowsTheNextMillisecond(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{})
	ms := nowMs(t, conn) + 5000
	mustExec(t, conn, "SELECT setval('snowflake_state', $1)", ms<<12|4093)
	rows, err := conn.Query(context.Background(), `SELECT (d).* FROM (SELECT snowflake_decompose(snowflake_next_id()) AS d
		FROM generate_series(1, 4) OFFSET 0) x`)
	if err != nil {
		t.Fatal(err)
	}
	type part struct{ Ms, Dc, M, Seq int64 }
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[part])
	if err != nil {
		t.Fatal(err)
	}
	// Sequence 4094 of ms, then (4095 and) the next millisecond at once,
	// five seconds ahead of the clock: borrowed, not waited for. A
	// catch-up may skip a value.
	if got[0] != (part{ms, 0, 0, 4094}) {
		t.Fatalf("first ID %v, want %v", got[0], part{ms, 0, 0, 4094})
	}
	for i := 1; i < len(got); i++ {
		p, q := got[i-1], got[i]
		if !(q.Ms == p.Ms && q.Seq > p.Seq || q.Ms == p.Ms+1 && p.Seq >= 4094 && q.Seq <= 3 || q.Ms == p.Ms && q.Ms == ms+1) {
			t.Fatalf("IDs across a full millisecond = %v: not carrying into the next millisecond", got)
		}
	}
	if last := got[len(got)-1]; last.Ms != ms+1 {
		t.Fatalf("IDs across a full millisecond = %v: never reached the next one", got)
	}
}

// TestNextIDRollbackNeverReuses: an ID whose insert was rolled back is
// never handed out again, even after the state falls behind and is moved
// up to the clock.
func TestNextIDRollbackNeverReuses(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{})
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), v int)")
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rolled int64
	if err := tx.QueryRow(ctx, "INSERT INTO t(v) VALUES (1) RETURNING id").Scan(&rolled); err != nil {
		t.Fatal(err)
	}
	tx.Rollback(ctx)
	// Also roll back a savepoint around a catch-up (the state is behind after a pause).
	time.Sleep(20 * time.Millisecond)
	mustExec(t, conn, "BEGIN; SAVEPOINT s; INSERT INTO t(v) VALUES (2); ROLLBACK TO s; COMMIT")
	next := queryInt(t, conn, "INSERT INTO t(v) VALUES (3) RETURNING id")
	if next <= rolled {
		t.Fatalf("ID after a rollback %d <= rolled-back %d", next, rolled)
	}
}

// TestNextIDSurvivesRestart: after a clean restart (fast shutdown) and
// after a crash (immediate shutdown, recovery from WAL), the next ID is
// above every ID handed out before, even when the state was ahead of the
// clock and the last IDs came from a transaction that wrote nothing else.
// It needs a server of its own to restart, so it skips where there are no
// server binaries (docker-compose's test service).
func TestNextIDSurvivesRestart(t *testing.T) {
	cluster := pgtest.Server(t)
	dsn := cluster.DSN()
	ctx := context.Background()
	conn := connect(t, dsn)
	installScript(t, conn, sqlgen.Options{})
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	// The state ahead of the clock: only the state itself can say where IDs are.
	mustExec(t, conn, "SELECT setval('snowflake_state', $1)", (nowMs(t, conn)+3000)<<12)
	conn.Close(ctx)
	for _, restart := range []struct {
		name  string
		crash bool
	}{{"fast shutdown", false}, {"crash", true}} {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var last int64
		for i := 0; i < 100; i++ {
			last = queryInt(t, conn, "INSERT INTO t DEFAULT VALUES RETURNING id")
		}
		// A read-only transaction that only takes IDs: it must not lose them.
		last = queryInt(t, conn, "SELECT max(snowflake_next_id()) FROM generate_series(1, 50)")
		conn.Close(ctx)
		if err := cluster.Restart(ctx, restart.crash); err != nil {
			t.Fatalf("restart (%s): %v", restart.name, err)
		}
		conn = connect(t, dsn)
		if next := queryInt(t, conn, "SELECT snowflake_next_id()"); next <= last {
			t.Fatalf("after a %s, next ID %d <= %d before it", restart.name, next, last)
		}
	}
}

// TestNextIDCancelNeverLeavesALock: sessions inserting while others are
// cancelled midway (statement_timeout of 1 ms on long multi-row inserts,
// pg_cancel_backend at random) and catch-ups are cut short: no lock is
// left held, nobody waits on anybody, and every ID is unique.
func TestNextIDCancelNeverLeavesALock(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	installScript(t, conn, sqlgen.Options{})
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), w int)")
	ctx := context.Background()
	deadline := time.Now().Add(4 * time.Second)
	var (
		wg                         sync.WaitGroup
		inserted, cancelled, other atomic.Int64
		pids                       sync.Map
		firstErr                   atomic.Value
	)
	worker := func(w int, timeout string, rows int) {
		defer wg.Done()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			firstErr.CompareAndSwap(nil, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "SET lock_timeout = '2s'; SET statement_timeout = "+timeout); err != nil {
			firstErr.CompareAndSwap(nil, err)
			return
		}
		pids.Store(w, c.PgConn().PID())
		for time.Now().Before(deadline) {
			tag, err := c.Exec(ctx, "INSERT INTO t(w) SELECT $1 FROM generate_series(1, $2::int)", w, rows)
			var pe *pgconn.PgError
			switch {
			case err == nil:
				inserted.Add(tag.RowsAffected())
			case errors.As(err, &pe) && pe.Code == "57014": // query_canceled
				cancelled.Add(1)
			default:
				other.Add(1)
				firstErr.CompareAndSwap(nil, fmt.Errorf("worker %d: %w", w, err))
				return
			}
		}
	}
	for w := 0; w < 4; w++ { // single-row inserts, never cut short by a timeout
		wg.Add(1)
		go worker(w, "0", 1)
	}
	for w := 4; w < 8; w++ { // long inserts, cut short by a 1-3 ms timeout
		wg.Add(1)
		go worker(w, fmt.Sprintf("%d", 1+w%3), 2000)
	}
	wg.Add(1)
	go func() { // cancel everyone at random, and cut catch-ups short by hand
		defer wg.Done()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			firstErr.CompareAndSwap(nil, err)
			return
		}
		defer c.Close(ctx)
		for i := 0; time.Now().Before(deadline); i++ {
			pids.Range(func(k, v any) bool {
				if k.(int)%3 == i%3 {
					c.Exec(ctx, "SELECT pg_cancel_backend($1)", v)
				}
				return true
			})
			if i%10 == 0 {
				// A catch-up cut short after it set the guard to 0.
				c.Exec(ctx, "SELECT setval('snowflake_catch_up_guard', 0)")
			}
			time.Sleep(3 * time.Millisecond)
		}
	}()
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows inserted, %d statements cancelled", inserted.Load(), cancelled.Load())
	if cancelled.Load() == 0 || inserted.Load() < 1000 {
		t.Fatalf("the test did not exercise cancels under load: %d cancelled, %d inserted", cancelled.Load(), inserted.Load())
	}
	if n := queryInt(t, conn, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"); n != 0 {
		t.Fatalf("%d advisory locks still held after every statement ended", n)
	}
	if n := queryInt(t, conn, "SELECT count(*) FROM t"); n != inserted.Load() {
		t.Fatalf("table has %d rows, %d inserts succeeded", n, inserted.Load())
	}
	if n := queryInt(t, conn, "SELECT count(*) - count(DISTINCT id) FROM t"); n != 0 {
		t.Fatalf("%d repeated IDs", n)
	}
	// And a cut-short catch-up is finished by the next call.
	mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', 0)")
	mustExec(t, conn, "SET statement_timeout = '5s'")
	queryInt(t, conn, "SELECT snowflake_next_id()")
	if g := queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')"); g == 0 {
		t.Fatalf("guard still 0 after a call: the cut-short catch-up was not finished")
	}
}

// TestNextIDCatchUpInOpenTransactionBlocksNoOne: a session that moved the
// state up inside a transaction it keeps open holds no lock; another
// session that must move it up too does so at once.
func TestNextIDCatchUpInOpenTransactionBlocksNoOne(t *testing.T) {
	dsn := pgtest.DSN(t)
	a := connect(t, dsn)
	installScript(t, a, sqlgen.Options{})
	mustExec(t, a, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	ctx := context.Background()
	guard0 := queryInt(t, a, "SELECT coalesce(pg_sequence_last_value('snowflake_catch_up_guard'), 0)")
	time.Sleep(20 * time.Millisecond) // the state falls behind
	mustExec(t, a, "BEGIN")
	mustExec(t, a, "INSERT INTO t DEFAULT VALUES")
	if g := queryInt(t, a, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')"); g <= guard0 {
		t.Fatalf("no catch-up ran in the open transaction (guard %d)", g)
	}
	b := connect(t, dsn)
	mustExec(t, b, "SET lock_timeout = '200ms'; SET statement_timeout = '2s'")
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	mustExec(t, b, "INSERT INTO t DEFAULT VALUES")
	if el := time.Since(start); el > 200*time.Millisecond {
		t.Errorf("insert took %v while another session's transaction is open", el)
	}
	if n := queryInt(t, b, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"); n != 0 {
		t.Errorf("%d advisory locks held", n)
	}
	mustExec(t, a, "COMMIT")
	_ = ctx
}

// TestNextIDNodeOnlyOwnerChanges: a role that is not the owner can insert
// with the default, but cannot change the node, set the state, or move
// the guard; its sessions have no setting that changes the node.
func TestNextIDNodeOnlyOwnerChanges(t *testing.T) {
	dsn := pgtest.DSN(t)
	owner := connect(t, dsn)
	installScript(t, owner, sqlgen.Options{Datacenter: 4, Machine: 2})
	mustExec(t, owner, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	role, roleDSN := pgtest.LoginRole(t, dsn, "nextid_app", "")
	mustExec(t, owner, "GRANT INSERT, SELECT ON t TO "+role)
	app := connect(t, roleDSN)
	id := queryInt(t, app, "INSERT INTO t DEFAULT VALUES RETURNING id")
	if d, _ := tw.Decompose(snowflake.ID(id)); d.Datacenter != 4 || d.Machine != 2 {
		t.Fatalf("app's ID has node %d/%d, want 4/2", d.Datacenter, d.Machine)
	}
	for _, q := range []string{
		"SELECT snowflake_set_node(9, 9)",
		"CREATE OR REPLACE FUNCTION public.snowflake_node_bits() RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT 0::bigint'",
		"SELECT setval('snowflake_state', 0)",
		"SELECT nextval('snowflake_catch_up_guard')",
		"SELECT setval('snowflake_catch_up_guard', 0)",
	} {
		_, err := app.Exec(context.Background(), q)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("as a non-owner, %s: %v; want insufficient_privilege", q, err)
		}
	}
	// Even with EXECUTE granted, a non-owner gets one clear error.
	mustExec(t, owner, "GRANT EXECUTE ON FUNCTION snowflake_set_node(integer, integer) TO "+role)
	_, err := app.Exec(context.Background(), "SELECT snowflake_set_node(9, 9)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "only the owner") {
		t.Errorf("non-owner with EXECUTE: %v; want insufficient_privilege saying only the owner can", err)
	}
	// Out-of-range node: the composer's words.
	_, err = owner.Exec(context.Background(), "SELECT snowflake_set_node(32, 0)")
	if !errors.As(err, &pe) || pe.Code != "22003" || pe.Message != snowflake.RangeMessage(snowflake.FieldDatacenter, "32", 0, 31) {
		t.Errorf("set_node(32, 0): %v; want 22003 %q", err, snowflake.RangeMessage(snowflake.FieldDatacenter, "32", 0, 31))
	}
	if n := queryInt(t, app, "SELECT snowflake_next_id()"); (n>>17)&31 != 4 || (n>>12)&31 != 2 {
		t.Errorf("node changed by a non-owner")
	}
}

// TestNextIDNodeChangeReachesLongLivedSessions: a session with a prepared
// INSERT, open before the owner changes the node, uses the new node on its
// next transaction (the plan that folded the old node is invalidated).
func TestNextIDNodeChangeReachesLongLivedSessions(t *testing.T) {
	dsn := pgtest.DSN(t)
	owner := connect(t, dsn)
	installScript(t, owner, sqlgen.Options{Datacenter: 1, Machine: 1})
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
	node := func() (int64, int64) {
		t.Helper()
		var id int64
		// The same pooled connection and prepared statement every time.
		if err := pool.QueryRow(ctx, "INSERT INTO t DEFAULT VALUES RETURNING id").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return (id >> 17) & 31, (id >> 12) & 31
	}
	for i := 0; i < 10; i++ { // past the plan cache's custom-plan tries
		if dc, m := node(); dc != 1 || m != 1 {
			t.Fatalf("node %d/%d, want 1/1", dc, m)
		}
	}
	mustExec(t, owner, "SELECT snowflake_set_node(17, 29)")
	if dc, m := node(); dc != 17 || m != 29 {
		t.Fatalf("long-lived session uses node %d/%d after the change, want 17/29", dc, m)
	}
}

// TestNextIDOtherLayout: the function follows the layout it was generated
// for (here 10 sequence bits, 6+6 node bits, another epoch).
func TestNextIDOtherLayout(t *testing.T) {
	l, err := snowflake.NewLayout(1600000000000, 41, 6, 6, 10)
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{Layout: l, Schema: "other", Datacenter: 63, Machine: 5})
	before := nowMs(t, conn)
	id := queryInt(t, conn, "SELECT other.snowflake_next_id()")
	after := nowMs(t, conn)
	d, err := l.Decompose(snowflake.ID(id))
	if err != nil {
		t.Fatal(err)
	}
	if d.Datacenter != 63 || d.Machine != 5 || d.Timestamp < before-8 || d.Timestamp > after {
		t.Fatalf("ID %d decomposes to %+v; want node 63/5 and a time in [%d, %d]", id, d, before-8, after)
	}
	// Borrowing at 1024 per millisecond.
	ms := after + 1000
	mustExec(t, conn, "SELECT setval('other.snowflake_state', $1)", ms<<10|1023)
	id = queryInt(t, conn, "SELECT other.snowflake_next_id()")
	if d, _ := l.Decompose(snowflake.ID(id)); d.Timestamp != ms+1 || d.Sequence != 0 {
		t.Fatalf("after sequence 1023, got %+v; want the next millisecond, sequence 0", d)
	}
}

// TestNextIDCatchesUpOncePerPeriod: in one session inserting in a loop, the
// fast path sends a call to the slow path only when a catch-up is due, and
// that call catches up; so there is about one slow call per period of
// sqlgen.CatchUpAfter, and the guard moves at each. (When the fast path
// and the catch-up disagreed on "due", one session made a dozen slow calls
// per catch-up, each a PL/pgSQL call for nothing.)
func TestNextIDCatchesUpOncePerPeriod(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{})
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), guard bigint)")
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "SET LOCAL track_functions = 'pl'")
	start := time.Now()
	// Each row also keeps the guard as it was after its ID was made.
	mustExec(t, conn, `DO $$ BEGIN FOR i IN 1..20000 LOOP
		INSERT INTO t VALUES (DEFAULT, pg_sequence_last_value('snowflake_catch_up_guard'));
	END LOOP; END $$`)
	elapsed := time.Since(start)
	slow := queryInt(t, conn, "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions WHERE funcname = 'snowflake_next_id_slow'")
	catchUps := queryInt(t, conn, "SELECT count(DISTINCT guard) FROM t")
	mustExec(t, conn, "COMMIT")
	periods := int64(elapsed/sqlgen.CatchUpAfter) + 2
	t.Logf("20,000 rows in %v: %d slow calls, %d catch-ups", elapsed, slow, catchUps)
	if catchUps < 2 || catchUps > periods {
		t.Errorf("%d catch-ups in %v; want 2 to %d (at most one per %v)", catchUps, elapsed, periods, sqlgen.CatchUpAfter)
	}
	if slow > catchUps+2 {
		t.Errorf("%d slow calls for %d catch-ups: the fast path takes the slow path when no catch-up is due", slow, catchUps)
	}
}

// TestNextIDFastPathWindow: the fast path serves while the last catch-up
// is recent, and never once it is sqlgen.StaleAfter old or more (the IDs'
// time would fall behind the clock): then the call catches up.
func TestNextIDFastPathWindow(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{})
	guard := func() int64 { return queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')") }
	queryInt(t, conn, "SELECT snowflake_next_id()") // a first catch-up
	for range 50 {
		// A catch-up in the future: the fast path serves, the guard stays.
		future := nowMs(t, conn) + 60_000
		mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', $1)", future)
		queryInt(t, conn, "SELECT snowflake_next_id()")
		if g := guard(); g != future {
			t.Fatalf("the guard moved from %d to %d on the fast path", future, g)
		}
		// StaleAfter old: every call catches up.
		stale := nowMs(t, conn) - sqlgen.StaleAfter.Milliseconds()
		mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', $1)", stale)
		queryInt(t, conn, "SELECT snowflake_next_id()")
		if g := guard(); g <= stale {
			t.Fatalf("a call with the last catch-up %v old took the fast path (guard %d)", sqlgen.StaleAfter, g)
		}
	}
}
