package attack

import (
	"context"
	"errors"
	"fmt"
	snowflake "github.com/sfgen/sfgen"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// catchUpLockKey is the first key of release 1's catch-up advisory lock
// ("sfg\0"); the second is the oid of snowflake_state.
const catchUpLockKey = 1936156416

// A stallTrick is one way for a role granted nothing (PUBLIC's defaults)
// to hold, or queue for, a lock that snowflake_next_id() may need. set
// runs it on sessions of staller's and returns what it holds.
type stallTrick struct {
	name string
	// since is the first release the trick applies to (release 1 has no
	// snowflake_state_lock).
	since int
	set   func(t *testing.T, e *env, staller, schema string) string
	// limitation, when not "", says why a later release cannot be
	// expected to withstand the trick: its outcome there is logged, not
	// judged.
	limitation string
}

// lockQueueLimitation: why no release can keep a role that can name a
// sequence from stalling nextval() on it.
const lockQueueLimitation = "PostgreSQL lets any role that can name a relation queue an AccessExclusiveLock " +
	"on it (CREATE RULE takes the lock before it checks ownership) behind a lock of its own that needs no " +
	"privilege (PREPARE in an open transaction); every nextval() then queues behind it, for bigserial " +
	"as for snowflake_next_id(), as long as the fast path calls nextval() as the caller"

var stallTricks = []stallTrick{
	{name: "advisory_lock_of_release_1", since: 1, set: holdReleaseOneLock},
	{name: "advisory_locks_on_guessable_keys", since: 1, set: holdGuessableLocks},
	{name: "lock_queue_on_snowflake_state", since: 1, limitation: lockQueueLimitation,
		set: func(t *testing.T, e *env, staller, schema string) string {
			return queueAccessExclusive(t, e, staller, qualify(schema, "snowflake_state"))
		}},
	{name: "lock_queue_on_snowflake_state_guard", since: 1, limitation: lockQueueLimitation,
		set: func(t *testing.T, e *env, staller, schema string) string {
			return queueAccessExclusive(t, e, staller, qualify(schema, "snowflake_state_guard"))
		}},
	{name: "lock_queue_on_snowflake_catch_up_guard", since: 2, limitation: lockQueueLimitation,
		set: func(t *testing.T, e *env, staller, schema string) string {
			return queueAccessExclusive(t, e, staller, qualify(schema, "snowflake_catch_up_guard"))
		}},
	{name: "lock_table_state_lock", since: 2, set: lockTable},
	{name: "pg_relation_size_in_open_transaction", since: 2,
		set: func(t *testing.T, e *env, staller, schema string) string {
			s := e.connect(staller)
			rel := qualify(schema, "snowflake_state_lock")
			s.exec(t, "BEGIN")
			s.exec(t, "SELECT pg_catalog.pg_relation_size($1::regclass)", rel)
			return "open transaction after pg_relation_size(); holds " + e.locksOf(t, s.pid(t), rel)
		}},
	{name: "prepare_in_open_transaction", since: 2,
		set: func(t *testing.T, e *env, staller, schema string) string {
			s := e.connect(staller)
			rel := qualify(schema, "snowflake_state_lock")
			s.exec(t, "BEGIN")
			// Parse analysis locks the relation; privileges are checked
			// only when a statement runs.
			for i, q := range []string{"SELECT * FROM %s", "SELECT * FROM %s FOR UPDATE", "DELETE FROM %s"} {
				s.exec(t, fmt.Sprintf("PREPARE sfgen_attack_%d AS "+q, i, rel))
			}
			return "open transaction with PREPAREd SELECT, SELECT FOR UPDATE and DELETE; holds " + e.locksOf(t, s.pid(t), rel)
		}},
	{name: "lock_queue_on_state_lock", since: 2,
		set: func(t *testing.T, e *env, staller, schema string) string {
			return queueAccessExclusive(t, e, staller, qualify(schema, "snowflake_state_lock"))
		}},
	// Release 7's guard and turn.
	{name: "lock_queue_on_snowflake_caught_up", since: 7, limitation: lockQueueLimitation,
		set: func(t *testing.T, e *env, staller, schema string) string {
			return queueAccessExclusive(t, e, staller, qualify(schema, "snowflake_caught_up"))
		}},
	{name: "lock_table_catch_up_turn", since: 7,
		set: func(t *testing.T, e *env, staller, schema string) string {
			return lockTableIn(t, e, staller, catalog.PrivateSchema(schema), "snowflake_catch_up_turn")
		}},
	{name: "lock_turn_rows", since: 7, set: lockTurnRows},
	{name: "lock_queue_on_catch_up_turn", since: 7,
		set: func(t *testing.T, e *env, staller, schema string) string {
			return prepareRefused(t, e, staller, qualify(catalog.PrivateSchema(schema), "snowflake_catch_up_turn"))
		}},
	{name: "pg_relation_size_of_turn_by_oid", since: 7,
		set: func(t *testing.T, e *env, staller, schema string) string {
			s := e.connect(staller)
			oid := relOID(t, s, catalog.PrivateSchema(schema), "snowflake_catch_up_turn")
			s.exec(t, "BEGIN")
			s.exec(t, "SELECT pg_catalog.pg_relation_size($1::oid::regclass)", oid)
			return "open transaction after pg_relation_size() of the turn's table by its oid (no USAGE needed); holds " +
				e.locksOf(t, s.pid(t), qualify(catalog.PrivateSchema(schema), "snowflake_catch_up_turn"))
		}},
}

// lockTurnRows tries to lock the turn's rows (FOR UPDATE, FOR SHARE and
// FOR KEY SHARE) and to move its key, as a role granted nothing: each
// must be refused.
func lockTurnRows(t *testing.T, e *env, staller, schema string) string {
	s := e.connect(staller)
	private := catalog.PrivateSchema(schema)
	turn, key := qualify(private, "snowflake_catch_up_turn"), qualify(private, "snowflake_catch_up_key")
	var got, refused []string
	s.exec(t, "BEGIN")
	for _, q := range []string{
		"SELECT slot FROM " + turn + " FOR UPDATE",
		"SELECT slot FROM " + turn + " FOR SHARE",
		"SELECT slot FROM " + turn + " FOR KEY SHARE",
		"SELECT pg_catalog.setval('" + key + "', 0)",
		"SELECT pg_catalog.nextval('" + key + "')",
	} {
		s.exec(t, "SAVEPOINT try")
		if _, err := s.ExecContext(context.Background(), q); err != nil {
			refused = append(refused, pgMessage(err))
			s.exec(t, "ROLLBACK TO SAVEPOINT try")
			continue
		}
		got = append(got, q)
		s.exec(t, "RELEASE SAVEPOINT try")
	}
	if len(got) > 0 {
		t.Errorf("a role with no privilege ran, in an open transaction: %s", strings.Join(got, "; "))
		return "ran and holds: " + strings.Join(got, "; ")
	}
	return "every row lock and key change refused (" + refused[0] + ", ...)"
}

// prepareRefused tries queueAccessExclusive's first step on rel, which
// must be refused: a role that cannot name rel cannot queue on it.
func prepareRefused(t *testing.T, e *env, staller, rel string) string {
	s := e.connect(staller)
	s.exec(t, "BEGIN")
	if _, err := s.ExecContext(context.Background(), "PREPARE sfgen_attack AS SELECT * FROM "+rel); err != nil {
		return "cannot name " + rel + ": " + pgMessage(err)
	}
	return queueAccessExclusive(t, e, staller, rel)
}

// relOID is the oid of schema.name, looked up in pg_class as any role
// can (a regclass cast would need USAGE on the schema).
func relOID(t testing.TB, s *session, schema, name string) int64 {
	t.Helper()
	var oid int64
	if err := s.QueryRowContext(context.Background(), `SELECT c.oid FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
		schema, name).Scan(&oid); err != nil {
		t.Fatalf("oid of %s.%s: %v", schema, name, err)
	}
	return oid
}

func holdReleaseOneLock(t *testing.T, e *env, staller, schema string) string {
	s := e.connect(staller)
	oid := relOID(t, s, schema, "snowflake_state")
	s.exec(t, "SELECT pg_catalog.pg_advisory_lock($1, $2)", catchUpLockKey, int32(oid))
	return fmt.Sprintf("holds pg_advisory_lock(%d, %d), release 1's catch-up lock", catchUpLockKey, oid)
}

// holdGuessableLocks takes, on one session, the advisory locks an
// attacker could guess from sfgen's objects and names.
func holdGuessableLocks(t *testing.T, e *env, staller, schema string) string {
	s := e.connect(staller)
	q := `
WITH o AS (
    SELECT c.oid::bigint AS oid FROM pg_catalog.pg_class c
    WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND c.relname LIKE 'snowflake%%'
  UNION SELECT p.oid::bigint FROM pg_catalog.pg_proc p
    WHERE p.pronamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND p.proname LIKE 'snowflake%%'
  UNION SELECT oid::bigint FROM pg_catalog.pg_namespace WHERE nspname = $1
  UNION SELECT oid::bigint FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()
), names AS (
    SELECT x.n FROM (SELECT c.relname::text FROM pg_catalog.pg_class c
        WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND c.relname LIKE 'snowflake%%'
      UNION SELECT p.proname::text FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND p.proname LIKE 'snowflake%%'
      UNION VALUES ('sfgen'), ('snowflake'), ('snowflake_state_lock'), ('snowflake_catch_up')) AS x(n)
    UNION SELECT $1 || '.' || x.n FROM (SELECT c.relname::text FROM pg_catalog.pg_class c
        WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND c.relname LIKE 'snowflake%%') AS x(n)
), keys AS (
    -- Two int4 keys.
    SELECT k1, k2 FROM (
        SELECT %[1]d AS k1, oid::integer AS k2 FROM o
      UNION SELECT 0, oid::integer FROM o
      UNION SELECT %[1]d, pg_catalog.hashtext(n) FROM names
      UNION SELECT %[1]d, g FROM pg_catalog.generate_series(0, 255) g
    ) k
), big AS (
    -- One int8 key.
    SELECT k FROM (
        SELECT oid AS k FROM o
      UNION SELECT (%[1]d::bigint << 32) | oid FROM o
      UNION SELECT pg_catalog.hashtext(n)::bigint FROM names
      UNION SELECT pg_catalog.hashtextextended(n, 0) FROM names
      UNION SELECT (%[1]d::bigint << 32) | pg_catalog.hashtext(n)::bigint FROM names
      UNION SELECT x'736667656e000000'::bigint + g FROM pg_catalog.generate_series(0, 255) g
    ) k
)
SELECT (SELECT pg_catalog.count(pg_catalog.pg_advisory_lock(k1, k2)) FROM keys)
     + (SELECT pg_catalog.count(pg_catalog.pg_advisory_lock(k)) FROM big)`
	var n int64
	if err := s.QueryRowContext(context.Background(), fmt.Sprintf(q, catchUpLockKey), schema).Scan(&n); err != nil {
		t.Fatalf("take the guessable advisory locks: %v", err)
	}
	return fmt.Sprintf("holds %d advisory locks: every sfgen object's oid, schema and database oid and name hash, "+
		"alone and with %d or 0, (%d, 0..255), and the 256 int8 keys from 'sfgen\\0\\0\\0' (sfgen's install lock among them)", n, catchUpLockKey, catchUpLockKey)
}

// lockTable tries LOCK TABLE on snowflake_state_lock in every mode, and
// holds what it gets. Release 2 must refuse them all.
func lockTable(t *testing.T, e *env, staller, schema string) string {
	return lockTableIn(t, e, staller, schema, "snowflake_state_lock")
}

// lockTableIn is lockTable on schema.name.
func lockTableIn(t *testing.T, e *env, staller, schema, name string) string {
	s := e.connect(staller)
	relOID(t, s, schema, name) // it must exist, or every mode is "refused"
	rel := qualify(schema, name)
	ctx := context.Background()
	var got, refused []string
	s.exec(t, "BEGIN")
	for _, mode := range []string{"ACCESS EXCLUSIVE", "EXCLUSIVE", "SHARE ROW EXCLUSIVE", "SHARE", "SHARE UPDATE EXCLUSIVE", "ROW EXCLUSIVE", "ROW SHARE", "ACCESS SHARE"} {
		s.exec(t, "SAVEPOINT try")
		if _, err := s.ExecContext(ctx, "LOCK TABLE "+rel+" IN "+mode+" MODE NOWAIT"); err != nil {
			refused = append(refused, mode+": "+pgMessage(err))
			s.exec(t, "ROLLBACK TO SAVEPOINT try")
			continue
		}
		got = append(got, mode)
		s.exec(t, "RELEASE SAVEPOINT try")
	}
	if len(got) > 0 {
		t.Errorf("LOCK TABLE %s was granted to a role with no privilege on it in %s mode", rel, strings.Join(got, ", "))
		return "LOCK TABLE granted and held in " + strings.Join(got, ", ") + " mode"
	}
	return "LOCK TABLE refused in every mode (" + refused[0] + ", ...)"
}

// queueAccessExclusive holds an AccessShareLock on rel from a PREPAREd
// statement in an open transaction, then, from a second session, CREATE
// RULE on rel, which waits for an AccessExclusiveLock behind it (before
// it checks ownership); the waiter stays queued until the test ends.
func queueAccessExclusive(t *testing.T, e *env, staller, rel string) string {
	holder := e.connect(staller)
	holder.exec(t, "BEGIN")
	holder.exec(t, "PREPARE sfgen_attack AS SELECT * FROM "+rel)
	waiter := e.connect(staller)
	wpid := waiter.pid(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := waiter.ExecContext(ctx, "CREATE RULE sfgen_attack AS ON INSERT TO "+rel+" DO INSTEAD NOTHING")
		done <- err
	}()
	t.Cleanup(func() { cancel(); <-done }) // before the sessions close
	deadline := time.Now().Add(time.Minute)
	for {
		if l := e.locksOf(t, wpid, rel); strings.Contains(l, "AccessExclusiveLock (waiting)") {
			return fmt.Sprintf("holds %s in an open transaction (PREPARE); a CREATE RULE queues for %s",
				e.locksOf(t, holder.pid(t), rel), l)
		}
		select {
		case err := <-done:
			done <- err
			return "CREATE RULE did not queue: " + pgMessage(err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("CREATE RULE on %s is neither queued nor done after a minute", rel)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// locksOf lists the locks backend pid holds, or waits for, on rel.
func (e *env) locksOf(t testing.TB, pid int, rel string) string {
	t.Helper()
	var s string
	if err := e.db.QueryRowContext(context.Background(), `
SELECT COALESCE(pg_catalog.string_agg(mode || CASE WHEN granted THEN '' ELSE ' (waiting)' END, ', ' ORDER BY mode), 'no lock')
FROM pg_catalog.pg_locks WHERE pid = $1 AND relation = pg_catalog.to_regclass($2)`, pid, rel).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s + " on " + rel
}

// pgMessage is err's server message, or err.
func pgMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message + " (" + pe.Code + ")"
	}
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// attackStall: after install, a role granted nothing plays trick; then
// two sessions of an application role INSERT with DEFAULT
// snowflake_next_id(), pausing 10 ms between rows so that the slow path
// runs, under statement_timeout = 5s as a guard against a hang. It
// succeeded if an insert failed (a stall ends at the timeout).
func attackStall(t *testing.T, e *env, release int, trick stallTrick) (bool, string) {
	t.Helper()
	const schema = "public"
	e.mustInstall(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
	e.exec("CREATE TABLE public.t (id bigint PRIMARY KEY DEFAULT " + qualify(schema, "snowflake_next_id()") + ", n integer)")
	app := e.role("app")
	e.exec("GRANT INSERT ON public.t TO " + pgident.Quote(app))
	if release >= 8 {
		e.exec("SELECT " + qualify(schema, "snowflake_grant(") + pgident.QuoteLiteral(app) + ")")
	}
	inserters := []*session{e.connect(app), e.connect(app)}
	for _, s := range inserters {
		s.exec(t, "SET statement_timeout = '5s'")
	}

	staller := e.role("staller")
	details := trick.set(t, e, staller, schema)

	const rows = 20
	var (
		mu       sync.Mutex
		failures []string
		inserted int
		wg       sync.WaitGroup
	)
	start := time.Now()
	for i, s := range inserters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < rows; n++ {
				t0 := time.Now()
				if _, err := s.ExecContext(context.Background(), "INSERT INTO public.t (n) VALUES ($1)", n); err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("session %d, row %d, after %s: %s", i+1, n+1,
						time.Since(t0).Round(10*time.Millisecond), pgMessage(err)))
					mu.Unlock()
					return
				}
				mu.Lock()
				inserted++
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	details = fmt.Sprintf("staller %s; %d of %d inserts done in %s", details, inserted, rows*len(inserters),
		time.Since(start).Round(10*time.Millisecond))
	if len(failures) > 0 {
		return true, details + "; failed: " + strings.Join(failures, "; ")
	}
	return false, details
}

func TestStall(t *testing.T) {
	t.Parallel()
	for _, trick := range stallTricks {
		t.Run(trick.name, func(t *testing.T) {
			t.Parallel()
			forEachRelease(t, func(t *testing.T, release int) {
				if release < trick.since {
					t.Skipf("release %d has not what the trick goes for (it applies from release %d)", release, trick.since)
				}
				t.Parallel()
				ok, details := attackStall(t, newEnv(t), release, trick)
				if release >= 2 && trick.limitation != "" {
					t.Logf("release %d: not judged (%s); succeeded=%v: %s", release, trick.limitation, ok, details)
					return
				}
				judge(t, release, ok, details)
			})
		})
	}
}
