package sqlgen_test

// Tests of snowflake_next_id() against a real PostgreSQL, from pgtest: a
// database of each test's own on $DATABASE_URL's server, or on a throwaway
// cluster. Each proves one of its guarantees, and fails when the template
// loses it; none depends on how fast the machine is.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
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
// table), and Up again works; both for sfgen's release line (what sfgen
// install applies, release 1 and each upgrade to sqlgen.Latest, each with
// its own Down) and for the one migration file sfgen migration writes into an
// application's directory (whose Down is another text).
func TestNextIDMigrationDownRemovesWhatUpCreated(t *testing.T) {
	o := sqlgen.Options{Schema: "ids", Datacenter: 2, Machine: 5}
	for _, c := range []struct {
		name string
		fsys func(t *testing.T) fs.FS
		// up applies fsys to dsn; nil: the goose provider's Up.
		up func(t *testing.T, dsn string)
	}{
		{"release line",
			func(t *testing.T) fs.FS {
				fsys, err := install.FS(o)
				if err != nil {
					t.Fatal(err)
				}
				return fsys
			},
			func(t *testing.T, dsn string) {
				// install.Apply's goose provider closes the *sql.DB it is given.
				idb, err := sql.Open("pgx", dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer idb.Close()
				if _, err := install.Apply(context.Background(), idb, o); err != nil {
					t.Fatal(err)
				}
			}},
		{"one migration file",
			func(t *testing.T) fs.FS {
				m, err := sqlgen.Migration(o)
				if err != nil {
					t.Fatal(err)
				}
				return fstest.MapFS{"00001_sfgen_snowflake.sql": &fstest.MapFile{Data: m}}
			},
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
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
					if err := rows.Scan(&s); err != nil {
						t.Fatal(err)
					}
					out = append(out, s)
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				return out
			}
			before := objects()
			p, err := goose.NewProvider(goose.DialectPostgres, db, c.fsys(t), goose.WithTableName("ids.sfgen_db_version"), goose.WithDisableGlobalRegistry(true))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if c.up != nil {
				c.up(t, dsn)
			} else if _, err := p.Up(ctx); err != nil {
				t.Fatalf("up: %v", err)
			}
			var id int64
			if err := db.QueryRow("SELECT ids.snowflake_next_id()").Scan(&id); err != nil {
				t.Fatalf("after Up: %v", err)
			}
			if d, _ := tw.Decompose(snowflake.ID(id)); d.Datacenter != 2 || d.Machine != 5 {
				t.Fatalf("ID from the migration has node %d/%d, want 2/5", d.Datacenter, d.Machine)
			}
			up := objects()
			for _, want := range []string{"function ids.snowflake_next_id()", "function ids.snowflake_node_bits()", "S snowflake_state", "S snowflake_state_guard", "S snowflake_catch_up_guard", "r snowflake_state_lock",
				"r snowflake_lease", "i snowflake_lease_pkey", "function ids.snowflake_lease_take(text,bigint)"} {
				if !slices.Contains(up, want) {
					t.Errorf("after Up, %q is missing from %q", want, up)
				}
			}
			if _, err := p.DownTo(ctx, 0); err != nil {
				t.Fatalf("down: %v", err)
			}
			if after := objects(); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Errorf("after Down the schema has\n%s\nwant what it had before Up:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
			}
			if _, err := p.Up(ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
		})
	}
}

// TestNextIDConcurrentUniqueAndMonotonic: 8 sessions inserting at once
// (through a primary key) get distinct IDs, each session's IDs increase,
// every ID carries the node, and its time is the clock's: never after the
// clock_timestamp() its row reads after the ID (floored, not rounded, and
// not ahead), and at most sqlgen.LagLimit behind the one its row reads
// before it. How far behind, as a rule, depends on the machine: it is
// logged, not checked.
func TestNextIDConcurrentUniqueAndMonotonic(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	installScript(t, conn, sqlgen.Options{Datacenter: 21, Machine: 12})
	// An INSERT evaluates the defaults in column order: before, id, after.
	mustExec(t, conn, `CREATE TABLE t (before timestamptz NOT NULL DEFAULT clock_timestamp(),
		id bigint PRIMARY KEY DEFAULT snowflake_next_id(),
		after timestamptz NOT NULL DEFAULT clock_timestamp(), worker int NOT NULL)`)
	const workers, perWorker = 8, 3000
	lagLimit := sqlgen.LagLimit.Milliseconds()
	ids := make([][]int64, workers)
	lags := make([][]int64, workers) // behind the clock read before the ID, ms
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
				lags[w] = append(lags[w], before.UnixMilli()-d.Timestamp)
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
	checkUnique(t, all)
	if n := queryInt(t, conn, "SELECT count(*) FROM t"); n != workers*perWorker {
		t.Fatalf("%d rows, want %d", n, workers*perWorker)
	}
	sort.Slice(lag, func(i, j int) bool { return lag[i] < lag[j] })
	t.Logf("time behind the clock read before the ID: p50 %d ms, p99 %d ms, max %d ms over %d IDs",
		lag[len(lag)/2], lag[len(lag)*99/100], lag[len(lag)-1], len(lag))
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
// one issued, on the fast path and through a catch-up alike (a catch-up
// never moves the state back): no error, and no waiting for the clock,
// which is still behind the state when the statement ends.
func TestNextIDClockStepsBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		guard string // what the catch-up guard is set to before the statement
	}{
		{"fast path", "clock_ms + 60000"}, // a catch-up "recent" for a minute
		{"catch-up due", fmt.Sprintf("clock_ms - %d", sqlgen.StaleAfter.Milliseconds())},
		{"catch-up cut short", "0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := connect(t, pgtest.DSN(t))
			installScript(t, conn, sqlgen.Options{})
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
			// Straight on from the seeded state, 4096 a millisecond, whatever
			// the clock says (a catch-up may skip a value, never go back).
			for i, id := range ids {
				ms := (id >> 22) + tw.Epoch()
				if ms < ahead || ms > ahead+3 || i > 0 && id <= ids[i-1] {
					t.Fatalf("ID %d after the step back is at %d ms (seeded state at %d): not continuing from the highest", i, ms, ahead)
				}
			}
			if ids[0] <= last {
				t.Fatalf("first ID after the step back %d <= %d before it", ids[0], last)
			}
		})
	}
}

// TestNextIDBorrowsTheNextMillisecond: past 4,095 IDs in a millisecond the
// next ID takes sequence 0 of the next millisecond at once (borrows it),
// five seconds ahead of the clock, rather than waiting for the clock,
// which is still behind the borrowed millisecond when the statement ends.
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
	if now := nowMs(t, conn); now > ms {
		t.Errorf("the clock reached the full millisecond %d before the IDs were made (now %d): it waited", ms, now)
	}
	// Sequence 4094 of ms, then (4095 and) the next millisecond. A
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

// TestNextIDRollbackNeverReuses: an ID whose insert was rolled back, with
// its transaction or a savepoint, is never handed out again: not by the
// next call, whether or not the rolled-back work included a catch-up, and
// not after a catch-up when the rolled-back ID was ahead of the clock.
// (The state is a sequence, which a rollback does not put back.)
func TestNextIDRollbackNeverReuses(t *testing.T) {
	stale := fmt.Sprintf("SELECT setval('snowflake_catch_up_guard', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - %d)", sqlgen.StaleAfter.Milliseconds())
	// After a pause: the state far behind the clock, the last catch-up old.
	behind := fmt.Sprintf("SELECT setval('snowflake_state', (trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000) << 12); %s", stale)
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
		{"ahead of the clock, then a catch-up", ahead, "BEGIN", "ROLLBACK", false, stale},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := connect(t, pgtest.DSN(t))
			installScript(t, conn, sqlgen.Options{})
			mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), v int)")
			if c.setup != "" {
				mustExec(t, conn, c.setup)
			}
			guard := queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')")
			mustExec(t, conn, c.begin)
			rolled := queryInt(t, conn, "INSERT INTO t(v) VALUES (1) RETURNING id")
			if g := queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')"); c.catchUp && g == guard {
				t.Fatalf("the rolled-back insert did not catch up (guard still %d)", g)
			}
			mustExec(t, conn, c.rollback)
			if c.beforeNext != "" {
				mustExec(t, conn, c.beforeNext)
				guard = queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')")
			}
			if next := queryInt(t, conn, "INSERT INTO t(v) VALUES (2) RETURNING id"); next <= rolled {
				t.Fatalf("ID after the rollback %d <= rolled-back %d", next, rolled)
			}
			if g := queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')"); c.beforeNext != "" && g == guard {
				t.Fatalf("the insert after the rollback did not catch up (guard still %d)", g)
			}
		})
	}
}

// TestNextIDSurvivesRestart: after a clean restart (fast shutdown) and
// after a crash (immediate shutdown, recovery from WAL), the next ID is
// above every ID handed out before, even with the state ahead of the clock
// (so that the clock cannot put it right) and the last IDs taken by a
// transaction that wrote nothing else. It needs a server of its own to
// restart, so it skips where there are no server binaries (as in
// docker-compose's test service).
func TestNextIDSurvivesRestart(t *testing.T) {
	cluster := pgtest.Server(t)
	dsn := cluster.DSN()
	ctx := context.Background()
	conn := connect(t, dsn)
	installScript(t, conn, sqlgen.Options{})
	mustExec(t, conn, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	conn.Close(ctx)
	for _, restart := range []struct {
		name  string
		crash bool
	}{{"fast shutdown", false}, {"crash", true}} {
		conn := connect(t, dsn)
		started := queryInt(t, conn, "SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint")
		// The state a minute ahead of the clock: only the state
		// itself can say where IDs are.
		mustExec(t, conn, "SELECT setval('snowflake_state', $1)", (nowMs(t, conn)+60000)<<12)
		for i := 0; i < 100; i++ {
			queryInt(t, conn, "INSERT INTO t DEFAULT VALUES RETURNING id")
		}
		// A read-only transaction that only takes IDs: it must not lose them.
		last := queryInt(t, conn, "SELECT max(snowflake_next_id()) FROM generate_series(1, 50)")
		if lastMs, now := (last>>22)+tw.Epoch(), nowMs(t, conn); lastMs <= now {
			t.Fatalf("before the %s the last ID is at %d ms, not ahead of the clock (%d ms)", restart.name, lastMs, now)
		}
		conn.Close(ctx)
		if err := cluster.Restart(ctx, restart.crash); err != nil {
			t.Fatalf("restart (%s): %v", restart.name, err)
		}
		conn = connect(t, dsn)
		if s := queryInt(t, conn, "SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint"); s == started {
			t.Fatalf("the server did not restart")
		}
		if next := queryInt(t, conn, "SELECT snowflake_next_id()"); next <= last {
			t.Fatalf("after a %s, next ID %d <= %d before it", restart.name, next, last)
		}
		conn.Close(ctx)
	}
}

// heldLocks lists the locks the sessions pids hold, one a line; idle
// sessions outside a transaction hold none, unless one leaked.
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

// TestNextIDCancelNeverLeavesALock: sessions inserting while others are
// cancelled midway (statement_timeout of 1 to 3 ms on long multi-row
// inserts, pg_cancel_backend at random) and catch-ups are cut short (the
// guard set to 0): no single-row insert waits lock_timeout (2 s) for a
// lock or runs for statement_timeout (30 s); once every statement has
// ended, no session holds a lock; every ID is unique; and the next call
// finishes a cut-short catch-up. It runs until enough of each has
// happened, not for a fixed time.
func TestNextIDCancelNeverLeavesALock(t *testing.T) {
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	installScript(t, conn, sqlgen.Options{})
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
	// fail keeps the first error and stops everyone.
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
		stop.Store(true)
	}
	// Sessions 0-3 make single-row inserts, which fail the test if they
	// wait lock_timeout for a lock or run for statement_timeout; 4-7 long
	// inserts, cut short by a 1-3 ms timeout. They stay open until the
	// locks are looked at.
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
				case errors.As(err, &pe) && pe.Code == "57014" && (rows > 1 || !strings.Contains(pe.Message, "statement timeout")): // query_canceled
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
			// As a catch-up cut short after it set the guard to 0.
			mustExec(t, canceller, "SELECT setval('snowflake_catch_up_guard', 0)")
			cutShort.Add(1)
		}
		if cancelled.Load() >= minCancelled && inserted.Load() >= minInserted && cutShort.Load() >= minCutShort {
			stop.Store(true)
		} else if time.Now().After(deadline) {
			fail(fmt.Errorf("the test did not exercise cancels under load: in %v, %d statements cancelled, %d rows inserted, %d catch-ups cut short; want at least %d, %d, %d",
				2*time.Minute, cancelled.Load(), inserted.Load(), cutShort.Load(), minCancelled, minInserted, minCutShort))
		}
		time.Sleep(3 * time.Millisecond) // pacing: let statements run between cancels
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
	// And a cut-short catch-up is finished by the next call.
	mustExec(t, conn, "SELECT setval('snowflake_catch_up_guard', 0)")
	mustExec(t, conn, "SET statement_timeout = '10s'")
	queryInt(t, conn, "SELECT snowflake_next_id()")
	if g := queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')"); g == 0 {
		t.Fatalf("guard still 0 after a call: the cut-short catch-up was not finished")
	}
}

// TestNextIDCatchUpInOpenTransactionBlocksNoOne: a session that caught
// the state up inside a transaction it keeps open holds no lock on
// snowflake_state_lock meanwhile, so another session that must catch up
// too does so (its catch-up moves the guard) rather than find the lock
// taken and go without; nobody waits.
func TestNextIDCatchUpInOpenTransactionBlocksNoOne(t *testing.T) {
	dsn := pgtest.DSN(t)
	a := connect(t, dsn)
	installScript(t, a, sqlgen.Options{})
	mustExec(t, a, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id())")
	guard := func(c *pgx.Conn) int64 {
		return queryInt(t, c, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')")
	}
	// The last catch-up StaleAfter old: the next call catches up.
	makeStale := func(c *pgx.Conn) int64 {
		return queryInt(t, c, "SELECT setval('snowflake_catch_up_guard', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1)", sqlgen.StaleAfter.Milliseconds())
	}
	stale := makeStale(a)
	mustExec(t, a, "BEGIN")
	mustExec(t, a, "INSERT INTO t DEFAULT VALUES")
	if g := guard(a); g == stale {
		t.Fatalf("no catch-up ran in the open transaction (guard %d)", g)
	}
	b := connect(t, dsn)
	if locks := heldLocks(t, b, []uint32{a.PgConn().PID()}); strings.Contains(locks, "snowflake_state_lock") {
		t.Errorf("the open transaction that caught up holds:\n%s", locks)
	}
	mustExec(t, b, "SET lock_timeout = '5s'; SET statement_timeout = '10s'")
	stale = makeStale(b)
	mustExec(t, b, "INSERT INTO t DEFAULT VALUES")
	if g := guard(b); g == stale {
		t.Errorf("another session, due a catch-up while the transaction is open, did not catch up (guard %d): the lock was taken", g)
	}
	mustExec(t, a, "COMMIT")
}

// TestNextIDNodeOnlyOwnerChanges: a role that is not the owner can insert
// with the default, but cannot change the node (not even with EXECUTE on
// snowflake_set_node(), which then says only the owner can), set the
// state, or move the guard; and the owner cannot set a node out of range
// (the composer's message). The IDs keep the node throughout.
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
		t.Errorf("IDs now have node %d/%d, want 4/2 still: changed by the non-owner or by the out-of-range call", (n>>17)&31, (n>>12)&31)
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
	var pid uint32
	node := func() (int64, int64) {
		t.Helper()
		var id int64
		var p uint32
		// The same pooled connection and prepared statement every time.
		if err := pool.QueryRow(ctx, "INSERT INTO t DEFAULT VALUES RETURNING id, pg_backend_pid()").Scan(&id, &p); err != nil {
			t.Fatal(err)
		}
		if pid == 0 {
			pid = p
		} else if p != pid {
			t.Fatalf("the pool's session changed from backend %d to %d", pid, p)
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
// for (here 10 sequence bits, 6+6 node bits, another epoch): the node in
// its bits, the time the clock's (at most sqlgen.LagLimit behind), and
// borrowing after 1,023 IDs in a millisecond.
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
	if lo := before - sqlgen.LagLimit.Milliseconds(); d.Datacenter != 63 || d.Machine != 5 || d.Timestamp < lo || d.Timestamp > after {
		t.Fatalf("ID %d decomposes to %+v; want node 63/5 and a time in [%d, %d]", id, d, lo, after)
	}
	// Borrowing at 1024 per millisecond.
	ms := after + 1000
	mustExec(t, conn, "SELECT setval('other.snowflake_state', $1)", ms<<10|1023)
	id = queryInt(t, conn, "SELECT other.snowflake_next_id()")
	if d, _ := l.Decompose(snowflake.ID(id)); d.Timestamp != ms+1 || d.Sequence != 0 {
		t.Fatalf("after sequence 1023, got %+v; want the next millisecond, sequence 0", d)
	}
}

// slowCalls is how many times this transaction has called the slow path,
// snowflake_next_state(); the transaction must have SET LOCAL
// track_functions = 'pl' first.
func slowCalls(t testing.TB, conn *pgx.Conn) int64 {
	t.Helper()
	return queryInt(t, conn, "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_xact_user_functions WHERE funcname = 'snowflake_next_state'")
}

// TestNextIDCatchesUpOncePerPeriod: in one session inserting in a loop,
// the fast path sends a call to the slow path only when a catch-up is
// due, and that call catches up: there are exactly as many slow calls as
// catch-ups (moves of the guard), and each catch-up comes at least
// sqlgen.CatchUpAfter after the one before. (When the fast path and the
// catch-up disagreed on "due", one session made a dozen slow calls per
// catch-up, each a PL/pgSQL call for nothing.) It inserts until the
// guard has moved enough times, not a fixed number of rows.
func TestNextIDCatchesUpOncePerPeriod(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{})
	// Each row keeps the guard as it was after its ID was made (an INSERT
	// evaluates its columns in order).
	mustExec(t, conn, "CREATE TABLE t (n bigserial, id bigint PRIMARY KEY DEFAULT snowflake_next_id(), guard bigint)")
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "SET LOCAL track_functions = 'pl'")
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
	slow := slowCalls(t, conn)
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

// TestNextIDFastPathWindow: the fast path serves, without a call to the
// slow path, while the last catch-up is recent (here in the future, as
// after the clock stepped back), and never once it is sqlgen.StaleAfter
// old or more (the IDs' time would fall behind the clock) or cut short
// (the guard at 0): then the call takes the slow path and catches up.
func TestNextIDFastPathWindow(t *testing.T) {
	conn := connect(t, pgtest.DSN(t))
	installScript(t, conn, sqlgen.Options{})
	guard := func() int64 { return queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_catch_up_guard')") }
	queryInt(t, conn, "SELECT snowflake_next_id()") // a first catch-up
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "SET LOCAL track_functions = 'pl'")
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
