package sqlgen_test

// Tests of the SQL generator's snowflake_next_id() against a real
// PostgreSQL, from pgtest, of what only the SQL generator has: the script
// run again and the migrations' Down. The guarantees it shares with the
// native generator are generatortest's contract, run against it by
// TestGeneratorContract (contract_test.go).

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
)

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
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 3, Machine: 7})
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
			out, err := exec.Command(psql, "-X", "-q", "-1", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", path).CombinedOutput()
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
	o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 2, Machine: 5}
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
					SELECT c.relkind::text || ' ' || CASE WHEN n.nspname = 'ids' THEN '' ELSE n.nspname || '.' END || c.relname
					FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
					WHERE n.nspname IN ('ids', 'ids_sfgen') AND c.relname NOT LIKE 'sfgen_db_version%'
					UNION ALL
					SELECT 'schema ' || n.nspname FROM pg_namespace n WHERE n.nspname = 'ids_sfgen'
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
				"r ids_sfgen.snowflake_lease", "i ids_sfgen.snowflake_lease_pkey", "schema ids_sfgen", "function ids.snowflake_lease_take(text,bigint)"} {
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
