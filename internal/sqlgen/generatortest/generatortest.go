// Package generatortest is the one contract suite of snowflake_next_id():
// the guarantees docs/generator.md gives, written once and run, scenario
// by scenario, against each generator (the SQL one internal/sqlgen
// renders, the native C one internal/native builds), with the database
// helpers those generators' tests share. Only tests import it.
//
// Each generator's tests call [Run] with a [Generator] saying how to
// install it; every scenario is a subtest of the caller's test, so that
//
//	go test -run 'TestGeneratorContract/BorrowsTheNextMillisecond' ./internal/native/
//
// runs one scenario against one generator. Every ID is decoded with the
// Go layout, an oracle independent of both generators. No check depends
// on how fast the machine is.
package generatortest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// Generator describes one implementation of snowflake_next_id() to the
// suite.
type Generator struct {
	// Name says which generator it is, in the suite's messages.
	Name string
	// Language is the language snowflake_next_id() is in once Install
	// has run (pg_language.lanname: "sql", "c"); the suite checks that it
	// still is after a restart.
	Language string
	// Install puts sfgen for o into the empty database conn is on, with
	// this generator as o's schema's snowflake_next_id(). It may skip t
	// when the generator cannot be had here.
	Install func(t *testing.T, conn *pgx.Conn, o sqlgen.Options)
	// SlowCalls counts the calls conn's backend has sent to the slow path
	// (the catch-up's side, snowflake_next_state() or its C twin) in the
	// public schema. The suite calls it only inside a transaction, first
	// before the calls it counts: the difference of two readings in one
	// transaction is the number of slow calls between them.
	SlowCalls func(t testing.TB, conn *pgx.Conn) int64
}

// long are the scenarios go test -short skips.
var long = map[string]bool{"SurvivesRestart": true, "CancelNeverLeavesALock": true, "ClockStepsBack": true}

// Run runs every scenario of the contract against g, each as a subtest
// of t named for the guarantee it proves.
func Run(t *testing.T, g Generator) {
	if g.Name == "" || g.Language == "" || g.Install == nil || g.SlowCalls == nil {
		t.Fatalf("generatortest: generator %+v: want a Name, a Language, Install and SlowCalls", g)
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			if testing.Short() && long[s.name] {
				t.Skip("restarts a server, cancels or steps a clock: long; run without -short")
			}
			s.run(t, g)
		})
	}
}

// Setup installs g for o in a new database of t's own and returns the
// database's DSN and a connection to it.
func Setup(t *testing.T, g Generator, o sqlgen.Options) (string, *pgx.Conn) {
	t.Helper()
	dsn := pgtest.DSN(t)
	conn := Connect(t, dsn)
	g.Install(t, conn, o)
	return dsn, conn
}

// Connect opens a connection to dsn, closed when t ends.
func Connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// InstallScript renders sfgen's plain script for o and runs it on conn:
// the SQL generator, and the objects the native one is installed over.
func InstallScript(t testing.TB, conn *pgx.Conn, o sqlgen.Options) {
	t.Helper()
	script, err := sqlgen.Script(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), string(script)); err != nil {
		t.Fatalf("install: %v", err)
	}
}

// MustExec runs q on conn and fails t if it fails.
func MustExec(t testing.TB, conn *pgx.Conn, q string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// QueryInt runs q on conn and returns the one integer it selects.
func QueryInt(t testing.TB, conn *pgx.Conn, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// NowMs is the server's clock_timestamp() in Unix milliseconds, floored.
func NowMs(t testing.TB, conn *pgx.Conn) int64 {
	t.Helper()
	return QueryInt(t, conn, "SELECT trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint")
}

// CheckUnique fails t when ids has a repeat.
func CheckUnique(t testing.TB, ids []int64) {
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

// HeldLocks lists the locks the sessions pids hold, one a line; idle
// sessions outside a transaction hold none, unless one leaked.
func HeldLocks(t testing.TB, conn *pgx.Conn, pids []uint32) string {
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

// guard is the catch-up guard of conn's public schema: the fast path's
// deadline (the last catch-up's millisecond + sqlgen.CatchUpDue), 0 while
// one runs (or was cut short).
func guard(t testing.TB, conn *pgx.Conn) int64 {
	t.Helper()
	return QueryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_caught_up')")
}

// makeStale sets the guard StaleAfter before the clock, so that the next
// call catches up, and returns what it set.
func makeStale(t testing.TB, conn *pgx.Conn) int64 {
	t.Helper()
	return QueryInt(t, conn, staleGuard)
}

var staleGuard = fmt.Sprintf("SELECT setval('snowflake_caught_up', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - %d)", sqlgen.StaleAfter.Milliseconds())

// A Stop is what the sessions of a long scenario share: a flag that ends
// them all, and the first error that made one of them stop it.
type Stop struct {
	stopped atomic.Bool
	mu      sync.Mutex
	err     error
}

// Fail keeps err if it is the first, and stops everyone.
func (s *Stop) Fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.stopped.Store(true)
}

// Now stops everyone without an error.
func (s *Stop) Now() { s.stopped.Store(true) }

// Stopped reports whether someone stopped.
func (s *Stop) Stopped() bool { return s.stopped.Load() }

// Err returns the first error given to Fail, or nil.
func (s *Stop) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// TurnRow is a query that locks the row of the catch-up's current turn
// (release 7) in the public schema's generator, FOR UPDATE with suffix
// ("", " NOWAIT" or " SKIP LOCKED"): run as the owner in an open
// transaction, it holds the turn as a catch-up does, so that no other
// session can catch up until that transaction ends.
func TurnRow(suffix string) string {
	return fmt.Sprintf("SELECT t.slot FROM public_sfgen.snowflake_catch_up_turn t WHERE t.slot = coalesce(pg_sequence_last_value('public_sfgen.snowflake_catch_up_key'), 0) %% %d FOR UPDATE%s",
		sqlgen.CatchUpTurns, suffix)
}
