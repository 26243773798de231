package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
)

// libfaketime is where Debian's libfaketime package puts the library.
const libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

// TestResumeAfterLogicalSwitchover is docs/releases.md's switchover, with
// real logical replication: the old writer's clock is 60 s ahead
// (libfaketime), so its IDs are dated a minute in the future; a
// subscriber, installed from its schema with the same node, copies its
// table; writes move to the subscriber. There the generator starts at
// its own clock, below the old writer's IDs, and would hand out the old
// writer's IDs again within the minute; after sfgen resume every ID it
// makes is above every ID the old writer made, and 5,000 inserts through
// the primary key's default all go in.
func TestResumeAfterLogicalSwitchover(t *testing.T) {
	if testing.Short() {
		t.Skip("two servers and logical replication: long; run without -short")
	}
	if pgtest.External() {
		t.Skip("needs servers of its own; the tests run on $DATABASE_URL's server")
	}
	if _, err := os.Stat(libfaketime); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no libfaketime: %v", err)
		}
		t.Skipf("no libfaketime: %v", err)
	}
	ctx := context.Background()
	// The new writer first, on the real clock; then the old one, with the
	// library preloaded (only processes started from here on take it).
	newer := pgtest.Server(t)
	dir, err := os.MkdirTemp("", "sffaketime")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	offset := filepath.Join(dir, "offset")
	if err := os.WriteFile(offset, []byte("+60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LD_PRELOAD", libfaketime)
	t.Setenv("FAKETIME_TIMESTAMP_FILE", offset)
	t.Setenv("FAKETIME_NO_CACHE", "1")
	t.Setenv("DONT_FAKE_MONOTONIC", "1")
	older := pgtest.Server(t, pgcluster.WithSetting("wal_level", "logical"))
	os.Unsetenv("LD_PRELOAD") // for anything else this process starts

	oldDSN, newDSN := older.DSN(), newer.DSN()
	oldDB, newDB := testDB(t, oldDSN), testDB(t, newDSN)
	var skew float64
	if err := oldDB.QueryRow("SELECT extract(epoch FROM clock_timestamp()) - $1::float8", float64(time.Now().UnixNano())/1e9).Scan(&skew); err != nil || skew < 50 || skew > 70 {
		t.Fatalf("the old writer's clock is %.1f s ahead (%v); want 60: libfaketime not in effect", skew, err)
	}

	const table = "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT public.snowflake_next_id(), n int)"
	for _, dsn := range []string{oldDSN, newDSN} {
		if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--datacenter", "1", "--machine", "1"); code != 0 {
			t.Fatalf("install: %d, %s", code, errOut)
		}
		mustExecDB(t, testDB(t, dsn), table)
	}
	mustExecDB(t, oldDB, "INSERT INTO orders (n) SELECT g FROM generate_series(1, 20000) g")
	mustExecDB(t, oldDB, "CREATE PUBLICATION sfgen_orders FOR TABLE orders")
	host, port := older.Address()
	mustExecDB(t, newDB, fmt.Sprintf("CREATE SUBSCRIPTION sfgen_orders CONNECTION 'host=%s port=%d user=postgres dbname=postgres' PUBLICATION sfgen_orders", host, port))
	// Writes go on at the old writer while the copy runs.
	mustExecDB(t, oldDB, "INSERT INTO orders (n) SELECT g FROM generate_series(1, 5000) g")
	var oldMax int64
	var oldRows int
	if err := oldDB.QueryRow("SELECT max(id), count(*) FROM orders").Scan(&oldMax, &oldRows); err != nil {
		t.Fatal(err)
	}
	waitRows(t, newDB, oldRows)

	// The switchover: the old writer stops; the subscription goes.
	mustExecDB(t, newDB, "ALTER SUBSCRIPTION sfgen_orders DISABLE")
	mustExecDB(t, newDB, "ALTER SUBSCRIPTION sfgen_orders SET (slot_name = NONE)")
	mustExecDB(t, newDB, "DROP SUBSCRIPTION sfgen_orders")
	// The old writer's walsender lets go of the slot only when it notices
	// the subscriber gone, a moment after DISABLE: wait for that (the
	// slot busy is SQLSTATE 55006), a minute at most.
	for give := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var active bool
		if err := oldDB.QueryRow("SELECT active FROM pg_replication_slots WHERE slot_name = 'sfgen_orders'").Scan(&active); err != nil {
			t.Fatal(err)
		}
		if !active {
			break
		}
		if time.Now().After(give) {
			t.Fatal("the old writer's replication slot sfgen_orders is still active a minute after the subscription was disabled and dropped")
		}
	}
	mustExecDB(t, oldDB, "SELECT pg_drop_replication_slot('sfgen_orders')")

	// The premise: the new writer's generator is below the old writer's
	// IDs (they are a minute ahead of its clock).
	var next int64
	if err := newDB.QueryRow("SELECT public.snowflake_next_id()").Scan(&next); err != nil || next >= oldMax {
		t.Fatalf("before resume the new writer made %d (%v); want it below the old writer's largest ID %d, the test's premise", next, err, oldMax)
	}

	code, out, errOut := sfgen(t, "resume", "--dsn", newDSN)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("public.orders.id: largest ID of the node %d (index public.orders_pkey)", oldMax)) ||
		!strings.Contains(out, fmt.Sprintf("are above %d", oldMax)) {
		t.Fatalf("sfgen resume = %d, %q, %q; want it to name the old writer's largest ID %d", code, out, errOut, oldMax)
	}
	var lowest int64
	if err := newDB.QueryRowContext(ctx, `WITH made AS (INSERT INTO orders (n) SELECT g FROM generate_series(1, 5000) g RETURNING id)
		SELECT min(id) FROM made`).Scan(&lowest); err != nil {
		t.Fatalf("5,000 inserts on the new writer after resume: %v", err)
	}
	if lowest <= oldMax {
		t.Errorf("after resume the new writer made %d, not above the old writer's largest ID %d", lowest, oldMax)
	}
	var rows, distinct int
	if err := newDB.QueryRow("SELECT count(*), count(DISTINCT id) FROM orders").Scan(&rows, &distinct); err != nil || rows != oldRows+5000 || distinct != rows {
		t.Errorf("the new writer holds %d rows, %d distinct IDs (%v); want %d, all distinct", rows, distinct, err, oldRows+5000)
	}
	t.Logf("old writer: %d rows, largest ID %d (a minute ahead); new writer after resume: from %d", oldRows, oldMax, lowest)
}

// waitRows waits until db's orders has n rows: the subscription's copy
// and its stream.
func waitRows(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var got int
		if err := db.QueryRow("SELECT count(*) FROM orders").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscriber has %d of the publisher's %d rows after 2 minutes", got, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
