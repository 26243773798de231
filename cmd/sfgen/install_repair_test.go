package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// TestInstallRepairsAnOlderScript: release 1's plain script run over a
// schema sfgen install put at the latest release replaces its functions;
// verify says so, and the next sfgen install puts the latest release back
// (issue 28: it said "nothing to apply", and verify kept failing).
func TestInstallRepairsAnOlderScript(t *testing.T) {
	dsn := pgtest.DSN(t)
	if code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--datacenter", "1", "--machine", "1"); code != 0 {
		t.Fatalf("install = %d %s %s", code, out, errOut)
	}
	old, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(old)); err != nil {
		t.Fatalf("release 1's plain script over the latest: %v", err)
	}
	if code, out, _ := sfgen(t, "verify", "--dsn", dsn, "--count", "2000"); code == 0 || !strings.Contains(out, "an older release's plain script has replaced") {
		t.Fatalf("verify after release 1's script = %d:\n%s\nwant a failure naming the older script", code, out)
	}
	code, out, errOut := sfgen(t, "install", "--dsn", dsn)
	if code != 0 || strings.Contains(out, "nothing to apply") {
		t.Fatalf("install after release 1's script = %d, %q, %q; want the latest release applied again", code, out, errOut)
	}
	if code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--count", "2000"); code != 0 {
		t.Errorf("verify after the repair = %d:\n%s%s", code, out, errOut)
	}
	code, out, _ = sfgen(t, "node", "--dsn", dsn)
	if !strings.HasPrefix(out, "datacenter 1, machine 1 ") {
		t.Errorf("node after the repair = %d, %q; want 1/1 kept", code, out)
	}
	if code, out, _ := sfgen(t, "install", "--dsn", dsn); code != 0 || !strings.HasPrefix(out, "nothing to apply") {
		t.Errorf("install again = %d, %q; want nothing to apply", code, out)
	}
}

// TestInstallWaitsForOldStatements: an upgrade from release 6 while a
// session's transaction has taken an ID with release 6's code waits for
// it, at most sqlgen.LockWait, then exits 1 naming that session, with
// nothing changed; from release 7, whose expression is release 8's, it
// goes through at once. (Release 8 keeps release 1 to 6's guards at 0,
// so that their code takes its values from its own slow path: a
// transaction that read one before the upgrade must end first.)
func TestInstallWaitsForOldStatements(t *testing.T) {
	ctx := context.Background()
	for _, from := range []int{6, 7} {
		t.Run(fmt.Sprintf("from%d", from), func(t *testing.T) {
			dsn := pgtest.DSN(t)
			conn, schema := testSchema(t, dsn)
			script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, Datacenter: 1, Machine: 1}, from)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, string(script)); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, "CREATE TABLE "+schema+".t (id bigint PRIMARY KEY DEFAULT "+schema+".snowflake_next_id())"); err != nil {
				t.Fatal(err)
			}
			taker, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer taker.Close(ctx)
			var pid int
			if err := taker.QueryRow(ctx, "SELECT pg_catalog.pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			if _, err := taker.Exec(ctx, "BEGIN; INSERT INTO "+schema+".t DEFAULT VALUES"); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", schema)
			if from > 6 {
				if code != exitOK {
					t.Fatalf("upgrade from release %d beside an open transaction: exit %d, %s", from, code, errOut)
				}
				taker.Exec(ctx, "ROLLBACK")
				return
			}
			if code != exitFail || !strings.Contains(errOut, fmt.Sprintf("pid %d ", pid)) || !strings.Contains(errOut, "nothing was changed") {
				t.Fatalf("upgrade from release %d with pid %d's transaction open: exit %d, stderr %q; want exit 1 naming it", from, pid, code, errOut)
			}
			var release int
			if err := conn.QueryRow(ctx, "SELECT "+schema+".snowflake_release()").Scan(&release); err != nil || release != from {
				t.Fatalf("after the refusal: release %d, %v; want %d", release, err, from)
			}
			if _, err := taker.Exec(ctx, "COMMIT"); err != nil {
				t.Fatal(err)
			}
			if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", schema); code != exitOK {
				t.Fatalf("the upgrade once the transaction has ended: exit %d, %s", code, errOut)
			}
		})
	}
}
