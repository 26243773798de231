package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// TestResumeAfterSwitchover is a database that takes over node 1/1's
// writes from another whose clock ran 60 s ahead: the old writer's rows
// arrived (as logical replication copies them: explicit IDs, composed
// here by the README's formula at every millisecond from 2 s behind this
// database's clock to 60 s ahead of it), and this database's generator,
// at its own clock, makes the same IDs again: duplicate keys. After
// `sfgen resume` it makes none: every new ID is above the node's largest
// stored one, in either table whose default is the generator (one with
// an index, walked backwards; one without, scanned), and not above
// another node's IDs, which cannot collide. Running it again changes
// nothing; --after raises above a given ID too.
func TestResumeAfterSwitchover(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--datacenter", "1", "--machine", "1"); code != 0 {
		t.Fatalf("install: %d, %s", code, errOut)
	}
	db := testDB(t, dsn)
	mustExecDB(t, db, "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT public.snowflake_next_id(), n int)")
	mustExecDB(t, db, "CREATE TABLE events (id bigint DEFAULT public.snowflake_next_id_local(), n int)")
	mustExecDB(t, db, "CREATE TABLE other (id bigint PRIMARY KEY, n int)") // no default: not the generator's
	// The README's formula, at this database's clock.
	const compose = `((ms - 1288834974657) << 22) | (%d << 17) | (%d << 12)`
	mustExecDB(t, db, `INSERT INTO orders (id, n)
		SELECT `+fmt.Sprintf(compose, 1, 1)+`, 0
		FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now) c,
			generate_series(c.now - 2000, c.now + 60000) AS ms`)
	// The node's largest ID is in the table without an index, 61 s ahead;
	// another node's, 120 s ahead, in both, is no concern of this node's.
	mustExecDB(t, db, `INSERT INTO events (id, n)
		SELECT `+fmt.Sprintf(compose, 1, 1)+` | 7, 0 FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 61000 AS ms) c`)
	mustExecDB(t, db, `INSERT INTO orders (id, n)
		SELECT `+fmt.Sprintf(compose, 2, 2)+`, 0 FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 120000 AS ms) c`)
	mustExecDB(t, db, `INSERT INTO other (id, n)
		SELECT `+fmt.Sprintf(compose, 1, 1)+`, 0 FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3600000 AS ms) c`)
	var largest, otherNode int64
	if err := db.QueryRow(`SELECT max(id) FROM (SELECT id FROM orders UNION ALL SELECT id FROM events) a WHERE (id >> 12) & 1023 = 33`).Scan(&largest); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(`SELECT max(id) FROM orders WHERE (id >> 12) & 1023 <> 33`).Scan(&otherNode)

	// Before: the generator here repeats the old writer's IDs.
	if _, err := db.ExecContext(ctx, "INSERT INTO orders (n) VALUES (1)"); !isSQLState(err, "23505") {
		t.Fatalf("INSERT before sfgen resume = %v; want a duplicate key (23505): the test's premise", err)
	}

	code, out, errOut := sfgen(t, "resume", "--dsn", dsn)
	want := []string{
		fmt.Sprintf("public.events.id: largest ID of the node %d (scan of the table: no index on the column)", largest),
		"public.orders.id: largest ID of the node ",
		"(index public.orders_pkey)",
		fmt.Sprintf("raised: schema public's next IDs (datacenter 1, machine 1) are above %d", largest),
	}
	for _, w := range want {
		if code != 0 || !strings.Contains(out, w) {
			t.Fatalf("sfgen resume = %d, %q, %q; want it to say %q", code, out, errOut, w)
		}
	}
	if strings.Contains(out, "other") {
		t.Errorf("sfgen resume read a column whose default is not the generator:\n%s", out)
	}

	var rows, distinct int
	var minNew, maxNew int64
	err := db.QueryRowContext(ctx, `WITH i AS (INSERT INTO orders (n) SELECT 2 FROM generate_series(1, 2000) RETURNING id)
		SELECT count(*), count(DISTINCT id), min(id), max(id) FROM i`).Scan(&rows, &distinct, &minNew, &maxNew)
	if err != nil {
		t.Fatalf("INSERT after sfgen resume: %v", err)
	}
	if rows != 2000 || distinct != rows || minNew <= largest || maxNew >= otherNode {
		t.Errorf("after resume: %d rows, %d distinct, IDs %d to %d; want 2000 distinct above %d (the node's largest) and below %d (another node's, which cannot collide)",
			rows, distinct, minNew, maxNew, largest, otherNode)
	}

	// Again: nothing to raise.
	if code, out, _ := sfgen(t, "resume", "--dsn", dsn); code != 0 || !strings.Contains(out, "nothing to raise") {
		t.Errorf("sfgen resume again = %d, %q; want nothing to raise", code, out)
	}
	// --after an ID far above: the next IDs are above it; --json says so.
	// The fast path's deadline a minute ahead, as no catch-up writes it:
	// resume leaves the guard at 0, as a catch-up cut short does, so that
	// the first call after it catches up by the schema's own release.
	after := otherNode + 1<<22*1000
	mustExecDB(t, db, "SELECT setval('public.snowflake_caught_up', (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000)")
	code, out, errOut = sfgen(t, "resume", "--dsn", dsn, "--after", fmt.Sprint(after), "--json")
	var report struct {
		Columns []struct {
			Table string `json:"table"`
		} `json:"columns"`
		After  int64 `json:"after"`
		Above  int64 `json:"above"`
		Raised bool  `json:"raised"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &report) != nil || !report.Raised || report.Above != after || len(report.Columns) != 2 {
		t.Fatalf("sfgen resume --after %d --json = %d, %q, %q", after, code, out, errOut)
	}
	var guard int64
	if err := db.QueryRowContext(ctx, "SELECT pg_sequence_last_value('public.snowflake_caught_up')").Scan(&guard); err != nil || guard != 0 {
		t.Errorf("the guard after resume --after = %d, %v; want 0", guard, err)
	}
	var next int64
	if err := db.QueryRowContext(ctx, "INSERT INTO orders (n) VALUES (3) RETURNING id").Scan(&next); err != nil || next <= after {
		t.Errorf("the ID after resume --after %d = %d, %v; want above it", after, next, err)
	}
}

// TestResumeRefuses: a schema without sfgen or without a node is refused
// with one line, changing nothing; bad flags are exit 2.
func TestResumeRefuses(t *testing.T) {
	dsn := pgtest.DSN(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--dsn", dsn}, exitFail, "sfgen resume: schema not ready to resume: schema public has no sfgen\n"},
		{[]string{"--dsn", dsn, "--after", "-1"}, exitUsage, "sfgen resume: after -1 out of range"},
		{[]string{"--dsn", dsn, "--schema", "bad name"}, exitUsage, "sfgen resume: "},
	} {
		code, out, errOut := sfgen(t, append([]string{"resume"}, tc.args...)...)
		if code != tc.code || out != "" || !strings.HasPrefix(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("sfgen resume %q = %d, %q, %q; want exit %d and one line starting %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
	if code, _, errOut := sfgen(t, "install", "--dsn", dsn); code != 0 {
		t.Fatalf("install: %s", errOut)
	}
	if code, _, errOut := sfgen(t, "resume", "--dsn", dsn); code != exitFail || !strings.Contains(errOut, "schema public has no node: set the node this database takes over first (sfgen node --schema public --datacenter N --machine N)") {
		t.Errorf("sfgen resume without a node = %d, %q", code, errOut)
	}
}

// TestResumeRefusesOthersCode: a table whose key defaults to the
// generator has an index whose predicate calls, on constants, a function
// of role other: planning a read would run it as this role. sfgen resume
// exits 2 naming the table, the index, the function and its owner, and
// raises nothing.
func TestResumeRefusesOthersCode(t *testing.T) {
	dsn := pgtest.DSN(t)
	if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--datacenter", "1", "--machine", "1"); code != 0 {
		t.Fatalf("install: %d, %s", code, errOut)
	}
	other, _ := pgtest.LoginRole(t, dsn, "other", "")
	db := testDB(t, dsn)
	mustExecDB(t, db, "CREATE SCHEMA o AUTHORIZATION "+other+"; SET ROLE "+other+`;
CREATE FUNCTION o.yes(bigint) RETURNS boolean IMMUTABLE LANGUAGE sql RETURN true;
RESET ROLE;
CREATE TABLE public.orders (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), n bigint);
CREATE INDEX yes_n ON public.orders (n) WHERE o.yes(0)`)
	code, out, errOut := sfgen(t, "resume", "--dsn", dsn, "--schema", "ids")
	want := "public.orders's index yes_n calls o.yes(bigint), a function of role " + other
	if code != exitUsage || out != "" || !strings.Contains(errOut, want) || strings.Count(errOut, "\n") != 1 {
		t.Errorf("sfgen resume = %d, %q, %q; want exit 2 saying %q", code, out, errOut, want)
	}
}
