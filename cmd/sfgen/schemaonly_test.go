package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// dumpTools returns the directory of pg_dump and psql beside the server
// binaries, and skips t, saying so, where there are none (no server
// binaries at all, or the npm registry's server-only packages).
func dumpTools(t *testing.T) string {
	t.Helper()
	dir, err := pgcluster.FindBinDir(os.Getenv(pgcluster.BinEnv))
	if err != nil {
		t.Skipf("no pg_dump and psql beside the server binaries: %v", err)
	}
	for _, tool := range []string{"pg_dump", "psql"} {
		if _, err := os.Stat(filepath.Join(dir, tool)); err != nil {
			t.Skipf("no %s beside the server binaries in %s (a server-only package)", tool, dir)
		}
	}
	return dir
}

// schemaOnlyCopy restores into a new database what pg_dump --schema-only
// (from dir) prints of the database at dsn (the first step of a logical
// replication subscriber, a blue/green target or a staging copy) and
// returns the new database's DSN.
func schemaOnlyCopy(t *testing.T, dir, dsn string) string {
	t.Helper()
	dump, err := exec.Command(filepath.Join(dir, "pg_dump"), "--schema-only", "--no-owner", dsn).Output()
	if err != nil {
		t.Fatalf("pg_dump --schema-only: %v", err)
	}
	copyDSN := pgtest.DSN(t)
	restore := exec.Command(filepath.Join(dir, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", copyDSN)
	restore.Stdin = strings.NewReader(string(dump))
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("psql restoring the schema-only dump: %v\n%s", err, out)
	}
	return copyDSN
}

// TestSchemaOnlyCopy: a copy made without the data of sfgen's own tables
// never hangs an INSERT. On release 8 the first one fails at once with
// SF205, naming sfgen install; `sfgen install` on the copy (whose version
// table has no rows either) restores what the copy lacks, and the next
// INSERT succeeds. A release 7 database copied so (its INSERTs wait for
// ever there) is upgraded by the same command. Every ID the copy makes is
// distinct and carries the origin's node, which the copy keeps.
func TestSchemaOnlyCopy(t *testing.T) {
	ctx := context.Background()
	dir := dumpTools(t) // before any database is made
	for _, tc := range []struct {
		name    string
		release int // installed at the origin: sqlgen.Latest with sfgen install, else released.Script
	}{
		{"latest", sqlgen.Latest},
		{fmt.Sprintf("release_%d", released.Last), released.Last},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := pgtest.DSN(t)
			if tc.release == sqlgen.Latest {
				if code, _, errOut := sfgen(t, "install", "--dsn", origin, "--datacenter", "2", "--machine", "5"); code != 0 {
					t.Fatalf("install at the origin: %d, %s", code, errOut)
				}
			} else {
				script, err := released.Script(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 2, Machine: 5}, tc.release)
				if err != nil {
					t.Fatal(err)
				}
				mustExecDB(t, testDB(t, origin), string(script))
			}
			db := testDB(t, origin)
			mustExecDB(t, db, "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT public.snowflake_next_id(), n int)")
			mustExecDB(t, db, "INSERT INTO orders (n) SELECT g FROM generate_series(1, 100) g")

			copyDSN := schemaOnlyCopy(t, dir, origin)
			cp := testDB(t, copyDSN)
			if tc.release == sqlgen.Latest {
				// Directly: a clear error at once, never a wait. (The
				// statement timeout only turns a hang into a failure.)
				_, err := cp.ExecContext(ctx, "SET statement_timeout = '20s'; INSERT INTO orders (n) VALUES (1)")
				if !isSQLState(err, "SF205") || !strings.Contains(err.Error(), "snowflake_catch_up_turn has no row") {
					t.Fatalf("INSERT on the schema-only copy = %v; want SF205 at once", err)
				}
			}
			code, out, errOut := sfgen(t, "install", "--dsn", copyDSN)
			if code != 0 || !strings.Contains(out, fmt.Sprintf("schema public is at sfgen release %d", sqlgen.Latest)) {
				t.Fatalf("sfgen install on the schema-only copy = %d, %q, %q", code, out, errOut)
			}
			if _, err := cp.ExecContext(ctx, "SET statement_timeout = '20s'; INSERT INTO orders (n) SELECT g FROM generate_series(1, 1000) g"); err != nil {
				t.Fatalf("INSERT after sfgen install on the copy: %v", err)
			}
			var rows, distinct, wrongNode int
			if err := cp.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT id),
				count(*) FILTER (WHERE (id >> 17) & 31 <> 2 OR (id >> 12) & 31 <> 5) FROM orders`).Scan(&rows, &distinct, &wrongNode); err != nil {
				t.Fatal(err)
			}
			if rows != 1000 || distinct != rows || wrongNode != 0 {
				t.Errorf("the copy made %d rows, %d distinct IDs, %d not of node 2/5 (README's bit positions); want 1000, all distinct, none", rows, distinct, wrongNode)
			}
		})
	}
}
