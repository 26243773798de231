package attack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// The attacks of issue 22 and 31 that release 4's SQL defends against:
// each must succeed on release 3 (its plain script, as psql -f runs it),
// which proves the test can tell, and fail on release 4 and the latest.

// forReleases34 runs f on release 3, release 4 and the latest release.
func forReleases34(t *testing.T, f func(t *testing.T, release int)) {
	t.Helper()
	for _, r := range []int{3, 4, sqlgen.Latest} {
		t.Run(fmt.Sprintf("release%d", r), func(t *testing.T) { f(t, r) })
	}
}

// judge34 is judge for attacks that release 3 does not stop.
func judge34(t *testing.T, release int, succeeded bool, details string) {
	t.Helper()
	switch {
	case release == 3 && !succeeded:
		t.Errorf("release 3: the attack did not succeed, so this test cannot detect it: %s", details)
	case release >= 4 && succeeded:
		t.Errorf("release %d: the attack succeeded: %s", release, details)
	default:
		t.Logf("release %d: succeeded %v, as it must: %s", release, succeeded, details)
	}
}

// script34 installs release's plain script into schema with o.
func (e *env) script34(release int, o sqlgen.Options) {
	e.t.Helper()
	s, err := releaseScript(release, o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.exec(s)
}

// leaseTable is where release keeps schema's leases.
func leaseTable(release int, schema string) string {
	if release >= 4 {
		return pgident.Quote(schema+"_sfgen") + ".snowflake_lease"
	}
	return pgident.Quote(schema) + ".snowflake_lease"
}

type taken struct {
	dc, m        int64
	token        int64
	floor, high  int64
	err          error
	state, error string
}

// take leases a node from schema, as the superuser.
func (e *env) take(schema, holder string, ttl time.Duration) taken {
	e.t.Helper()
	var l taken
	l.err = e.db.QueryRowContext(context.Background(), "SELECT datacenter_id, machine_id, token, floor_ms, high_water_ms FROM "+
		pgident.Quote(schema)+".snowflake_lease_take($1::text, $2::bigint)", holder, ttl.Milliseconds()).Scan(&l.dc, &l.m, &l.token, &l.floor, &l.high)
	var pe *pgconn.PgError
	if errors.As(l.err, &pe) {
		l.state, l.error = pe.Code, pe.Message
	}
	return l
}

// twoSchemasOneLease installs release into schemas ids (node 0/0) and
// ids2 (node 1/1) of one layout, and leases a node in ids to holder
// "service".
func twoSchemasOneLease(t *testing.T, release int) (*env, taken) {
	t.Helper()
	e := newEnv(t)
	e.script34(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 0, Machine: 0})
	e.script34(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids2", Datacenter: 1, Machine: 1})
	l := e.take("ids", "service", time.Minute)
	if l.err != nil {
		t.Fatal(l.err)
	}
	return e, l
}

// judgeHeld is judge34 for giving a node that holder holds: from release
// 4, err must be SF204 naming holder.
func judgeHeld(t *testing.T, release int, err error, holder, call string) {
	t.Helper()
	var pe *pgconn.PgError
	if release >= 4 && (!errors.As(err, &pe) || pe.Code != "SF204" || !strings.Contains(pe.Message, holder)) {
		t.Errorf("%s: %v; want SF204 naming %s", call, err, holder)
	}
	judge34(t, release, err == nil, fmt.Sprintf("%s of a node %s: %v", call, holder, err))
}

// TestAttackLeasedNodeGivenToSchema: issue 22's fourth attack. A node
// leased in schema ids is given to schema ids2 of the same layout as its
// own node: release 3 lets it (and two makers then shared 329,945 IDs);
// release 4 refuses (SF204), naming the lease.
func TestAttackLeasedNodeGivenToSchema(t *testing.T) {
	forReleases34(t, func(t *testing.T, release int) {
		e, l := twoSchemasOneLease(t, release)
		_, err := e.db.ExecContext(context.Background(), "SELECT ids2.snowflake_set_node($1::integer, $2::integer)", l.dc, l.m)
		judgeHeld(t, release, err, "held by a lease in schema ids (holder service)", fmt.Sprintf("ids2.snowflake_set_node(%d, %d)", l.dc, l.m))
	})
}

// TestAttackReserveHeldNode: schema ids2 reserves a node another maker of
// the database holds: schema ids's own node, then a node leased in ids.
// Release 3 reserves both (the reservation's maker and the holder then
// share a node); from release 4 each is refused (SF204), naming the holder.
func TestAttackReserveHeldNode(t *testing.T) {
	forReleases34(t, func(t *testing.T, release int) {
		e, l := twoSchemasOneLease(t, release)
		for _, tc := range []struct {
			dc, m  int64
			holder string
		}{{0, 0, "schema ids's own node"}, {l.dc, l.m, "held by a lease in schema ids (holder service)"}} {
			_, err := e.db.ExecContext(context.Background(), "SELECT ids2.snowflake_lease_reserve($1::integer, $2::integer, 'elsewhere')", tc.dc, tc.m)
			judgeHeld(t, release, err, tc.holder, fmt.Sprintf("ids2.snowflake_lease_reserve(%d, %d)", tc.dc, tc.m))
		}
	})
}

// TestAttackLeasesAcrossSchemas: two schemas of one layout lease from
// their own tables. With every node of a tiny layout leased in ids,
// release 3 still leases one from ids2 (a node two services then hold);
// release 4 finds none free (SF202).
func TestAttackLeasesAcrossSchemas(t *testing.T) {
	tiny, err := snowflake.ParseLayout("epoch=1288834974657 timestamp=45 datacenter=1 machine=1 sequence=16")
	if err != nil {
		t.Fatal(err)
	}
	forReleases34(t, func(t *testing.T, release int) {
		e := newEnv(t)
		e.script34(release, sqlgen.Options{Layout: tiny, Schema: "ids", UnsetNode: true})
		e.script34(release, sqlgen.Options{Layout: tiny, Schema: "ids2", UnsetNode: true})
		held := map[[2]int64]bool{}
		for i := range 4 {
			l := e.take("ids", fmt.Sprint("a", i), time.Minute)
			if l.err != nil {
				t.Fatalf("take %d of 4 in ids: %v", i, l.err)
			}
			held[[2]int64{l.dc, l.m}] = true
		}
		l := e.take("ids2", "b", time.Minute)
		if release >= 4 && l.state != "SF202" {
			t.Errorf("a fifth lease of four nodes: %v; want SF202", l.err)
		}
		judge34(t, release, l.err == nil && held[[2]int64{l.dc, l.m}], fmt.Sprintf("ids2's lease: node %d/%d, %v", l.dc, l.m, l.err))
	})
}

// TestAttackTokenAfterSetseed: issue 22's fifth attack. A client that
// runs setseed() on a backend (a transaction-pooling pgbouncer shares
// them) knows the next token: after the same seed, two takes on two
// connections return the same token on release 3, and different ones on
// release 4.
func TestAttackTokenAfterSetseed(t *testing.T) {
	forReleases34(t, func(t *testing.T, release int) {
		e := newEnv(t)
		e.script34(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", UnsetNode: true})
		var tokens []int64
		for i := range 2 {
			s := e.connect("")
			s.exec(t, "SELECT setseed(0.77)")
			var token int64
			if err := s.QueryRowContext(context.Background(), "SELECT token FROM ids.snowflake_lease_take($1::text, 60000)", fmt.Sprint("h", i)).Scan(&token); err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, token)
		}
		judge34(t, release, tokens[0] == tokens[1], fmt.Sprintf("tokens after setseed(0.77): %d and %d", tokens[0], tokens[1]))
	})
}

// TestAttackLeaseLockQueue: issue 22's sixth attack. A lease client (USAGE
// on the schema, EXECUTE on the lease functions) holds a lock on the lease
// table from an open transaction, by naming it in a PREPARE, and a second
// session queues CREATE RULE (refused later, as not the owner) behind it:
// every renewal then waits in the queue. On release 3 a renewal waits for
// as long as the client likes (here, until it rolls back: the test sees the
// renewal wait on a lock in pg_stat_activity); on release 4 the client
// cannot name the table, and the renewal waits on no lock.
func TestAttackLeaseLockQueue(t *testing.T) {
	forReleases34(t, func(t *testing.T, release int) {
		e := newEnv(t)
		e.script34(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", UnsetNode: true})
		client := e.role("client")
		e.exec("GRANT USAGE ON SCHEMA ids TO " + client + "; GRANT EXECUTE ON FUNCTION ids.snowflake_lease_take(text, bigint), ids.snowflake_lease_renew(integer, integer, bigint, bigint) TO " + client)
		l := e.take("ids", "victim", time.Minute)
		if l.err != nil {
			t.Fatal(l.err)
		}
		ctx := context.Background()
		a, b := e.connect(client), e.connect(client)
		locked := false
		for _, table := range []string{leaseTable(3, "ids"), leaseTable(4, "ids")} {
			if _, err := a.ExecContext(ctx, "BEGIN"); err != nil {
				t.Fatal(err)
			}
			if _, err := a.ExecContext(ctx, "PREPARE p AS SELECT 1 FROM "+table); err == nil {
				locked = true
				break
			}
			a.ExecContext(ctx, "ROLLBACK")
		}
		ruled, ruleDone := make(chan error, 1), make(chan struct{})
		if locked {
			var pid int
			if err := b.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			go func() {
				_, err := b.ExecContext(ctx, "CREATE RULE r AS ON INSERT TO "+leaseTable(release, "ids")+" DO INSTEAD NOTHING")
				ruled <- err
				close(ruleDone)
			}()
			if !e.waitsOnLock(pid, ruleDone) { // CREATE RULE is queued
				t.Fatalf("CREATE RULE did not wait behind the client's lock: %v", <-ruled)
			}
		}
		// The renewal, on a session of its own: whether it waits on a lock
		// is the database's to say (pg_stat_activity), not a clock's.
		r := e.connect("")
		var pid int
		if err := r.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			t.Fatal(err)
		}
		var high *int64
		var err error
		renewed := make(chan struct{})
		go func() {
			defer close(renewed)
			err = r.QueryRowContext(ctx, "SELECT high_water_ms FROM ids.snowflake_lease_renew($1::integer, $2::integer, $3::bigint, 60000)", l.dc, l.m, l.token).Scan(&high)
		}()
		waited := e.waitsOnLock(pid, renewed)
		if locked {
			a.ExecContext(ctx, "ROLLBACK") // the renewal, if it waits, goes on
			<-ruled
		}
		<-renewed
		if release >= 4 && (err != nil || high == nil || waited) {
			t.Errorf("renewal under the attack: %v (high-water NULL: %v), waited on a lock: %v; want a renewal that waits for nobody", err, high == nil, waited)
		}
		judge34(t, release, locked && waited, fmt.Sprintf("the client locked the lease table: %v; the renewal waited on a lock: %v: %v", locked, waited, err))
	})
}

// waitsOnLock polls pg_stat_activity until the backend pid waits on a
// lock (true) or done is closed (false).
func (e *env) waitsOnLock(pid int, done <-chan struct{}) bool {
	e.t.Helper()
	for {
		select {
		case <-done:
			return false
		default:
		}
		var waiting bool
		if err := e.db.QueryRowContext(context.Background(), "SELECT coalesce(bool_or(wait_event_type = 'Lock'), false) FROM pg_catalog.pg_stat_activity WHERE pid = $1", pid).Scan(&waiting); err != nil {
			e.t.Fatal(err)
		}
		if waiting {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAttackUntrustedSchemaScript: the plain script into a schema every
// role can create in (public, on a database upgraded from PostgreSQL 14
// or older): release 3 installs there, where a look-alike or overload
// waits for a superuser; release 4 refuses (SF105) before it changes
// anything, with the REVOKE that fixes it.
func TestAttackUntrustedSchemaScript(t *testing.T) {
	forReleases34(t, func(t *testing.T, release int) {
		e := newEnv(t)
		e.exec("CREATE SCHEMA open; GRANT CREATE ON SCHEMA open TO PUBLIC")
		s, err := releaseScript(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "open", UnsetNode: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.db.ExecContext(context.Background(), s)
		var pe *pgconn.PgError
		if release >= 4 && (!errors.As(err, &pe) || pe.Code != "SF105" || !strings.Contains(pe.Message, "REVOKE CREATE ON SCHEMA open FROM PUBLIC")) {
			t.Errorf("install into an open schema: %v; want SF105 with the REVOKE", err)
		}
		var installed bool
		if err := e.db.QueryRowContext(context.Background(), "SELECT to_regprocedure('open.snowflake_next_id()') IS NOT NULL").Scan(&installed); err != nil {
			t.Fatal(err)
		}
		judge34(t, release, installed, fmt.Sprintf("installed into a schema PUBLIC can create in: %v (%v)", installed, err))
	})
}

// TestAttackClockStepGivesNodeTwice: issue 31's first scenario, the
// database's clock stepped forward past a live lease's expiry (here made
// so by moving the lease's expiry back, which is what the database sees).
// Release 3 gives the node to the next take at once, while its holder,
// counting its TTL on its own clock, still makes IDs with it; release 4
// gives another node, until a TTL after it first saw the lease expired.
func TestAttackClockStepGivesNodeTwice(t *testing.T) {
	forReleases34(t, func(t *testing.T, release int) {
		e := newEnv(t)
		e.script34(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", UnsetNode: true})
		first := e.take("ids", "slow holder", time.Minute)
		if first.err != nil {
			t.Fatal(first.err)
		}
		e.exec("UPDATE " + leaseTable(release, "ids") + " SET expires_at = clock_timestamp() - interval '1 second'")
		second := e.take("ids", "next holder", time.Minute)
		if second.err != nil {
			t.Fatal(second.err)
		}
		judge34(t, release, second.dc == first.dc && second.m == first.m,
			fmt.Sprintf("first holder %d/%d, the take after the step %d/%d", first.dc, first.m, second.dc, second.m))
	})
}

// TestAttackFutureFloor: issue 31's third scenario. A holder whose clock
// ran 30 s ahead gives its node back with its last ID dated 30 s ahead;
// release 3 hands that node to the next take with its floor there, so
// every ID of the next holder is dated in the future; release 4 gives a
// node whose floor is not ahead of the database's clock.
func TestAttackFutureFloor(t *testing.T) {
	forReleases34(t, func(t *testing.T, release int) {
		e := newEnv(t)
		e.script34(release, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", UnsetNode: true})
		fast := e.take("ids", "fast clock", time.Minute)
		if fast.err != nil {
			t.Fatal(fast.err)
		}
		// Its last ID 30 s ahead of the database's clock, read in the same
		// statement.
		e.exec(fmt.Sprintf("SELECT ids.snowflake_lease_release(%d, %d, %d, pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint + 30000)", fast.dc, fast.m, fast.token))
		next := e.take("ids", "next holder", time.Minute)
		if next.err != nil {
			t.Fatal(next.err)
		}
		var nowMs int64
		if err := e.db.QueryRowContext(context.Background(), "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint").Scan(&nowMs); err != nil {
			t.Fatal(err)
		}
		judge34(t, release, next.floor > nowMs+sqlgen.LeaseFutureBound.Milliseconds(),
			fmt.Sprintf("the next holder's floor is %d ms ahead of the database's clock (node %d/%d)", next.floor-nowMs, next.dc, next.m))
	})
}
