package native_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

// libfaketime is where Debian's libfaketime package puts the library.
const libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

// TestNativeClockStepsBackUnderFaketime: the server's own clock steps back
// a minute (libfaketime, preloaded into a server of the test's own, its
// offset read from a file at every clock read): IDs from the C function,
// and from the SQL one beside it, carry on from the highest one issued, on
// the fast path and through a catch-up, without waiting for the clock;
// and so they do after a crash with the clock still behind.
func TestNativeClockStepsBackUnderFaketime(t *testing.T) {
	if testing.Short() {
		t.Skip("a server under libfaketime, stepped back, crashed: long; run without -short")
	}
	so := library(t, tw)
	if _, err := os.Stat(libfaketime); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no libfaketime: %v", err)
		}
		t.Skipf("no libfaketime: %v", err)
	}
	dir, err := os.MkdirTemp("", "sffaketime")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	offset := filepath.Join(dir, "offset")
	setOffset := func(s string) {
		t.Helper()
		if err := os.WriteFile(offset, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setOffset("+0")
	t.Setenv("LD_PRELOAD", libfaketime)
	t.Setenv("FAKETIME_TIMESTAMP_FILE", offset)
	t.Setenv("FAKETIME_NO_CACHE", "1")
	t.Setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1")
	t.Setenv("DONT_FAKE_MONOTONIC", "1")
	cluster := pgtest.Server(t)
	ctx := context.Background()
	conn := connect(t, cluster.DSN())
	installNative(t, conn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 2, Machine: 3}, so, false)
	installNative(t, conn, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 2, Machine: 3}, so, true)
	// The server's clock against this process's, in ms.
	skew := func() int64 { return nowMs(t, conn) - time.Now().UnixMilli() }
	if s := skew(); s < -1000 || s > 1000 {
		t.Fatalf("the server's clock is %d ms off before the step: libfaketime's offset file not read", s)
	}
	last := queryInt(t, conn, "SELECT max(snowflake_next_id()) FROM generate_series(1, 1000)")
	lastMs := (last >> 22) + tw.Epoch()

	setOffset("-60")
	for i := 0; skew() > -50000; i++ {
		if i == 100 {
			t.Fatalf("the server's clock did not step back (%d ms off)", skew())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if now := nowMs(t, conn); now >= lastMs {
		t.Fatalf("after the step the server's clock (%d ms) is not behind the last ID (%d ms)", now, lastMs)
	}
	check := func(what string, after int64) int64 {
		t.Helper()
		rows, err := conn.Query(ctx, "SELECT CASE WHEN g % 2 = 0 THEN snowflake_next_id() ELSE snowflake_next_id_native() END FROM generate_series(1, 10000) g")
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for i, id := range ids {
			d, err := tw.Decompose(snowflake.ID(id))
			if err != nil || id <= after || i > 0 && id <= ids[i-1] || d.Datacenter != 2 || d.Machine != 3 || d.Timestamp < lastMs {
				t.Fatalf("%s: ID %d (%+v, %v) after %d: want increasing IDs of node 2/3 from the highest issued (%d ms) on", what, id, d, err, after, lastMs)
			}
		}
		if now := nowMs(t, conn); now >= lastMs {
			t.Errorf("%s: the clock (%d ms) reached the last ID's time (%d ms) before the statement ended: it waited", what, now, lastMs)
		}
		return ids[len(ids)-1]
	}
	last = check("fast path, the last catch-up in the clock's future", last)
	set := queryInt(t, conn, "SELECT setval('snowflake_caught_up', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1)", sqlgen.StaleAfter.Milliseconds())
	last = check("a catch-up due", last)
	if g := queryInt(t, conn, "SELECT pg_sequence_last_value('snowflake_caught_up')"); g <= set {
		t.Errorf("no catch-up ran (guard %d, set to %d)", g, set)
	}
	conn.Close(ctx)
	if err := cluster.Restart(ctx, true); err != nil {
		t.Fatalf("crash: %v", err)
	}
	conn = connect(t, cluster.DSN())
	if s := skew(); s > -50000 {
		t.Fatalf("after the crash the server's clock is %d ms off, not a minute behind", s)
	}
	check("after a crash, the clock still behind", last)
}
