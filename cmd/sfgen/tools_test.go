package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	_ "github.com/golang-migrate/migrate/v4/source/file"
	"github.com/jackc/pgx/v5"
	ternmigrate "github.com/jackc/tern/v2/migrate"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/migrationdir"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// A migrationTool runs a directory of migrations against a database, as
// the real tool does.
type migrationTool struct {
	format migrationdir.Format
	// up applies every pending migration; down rolls the last one back.
	up, down func(t *testing.T, dir, dsn string) error
	// recorded says what the tool's own version table records, in words
	// the test compares: "none", "3", "3 dirty".
	recorded func(t *testing.T, conn *pgx.Conn) string
}

// migrationTools are goose, golang-migrate and tern as Go modules, and
// dbmate, the npm registry's binary, when there is one (dbmateCommand).
func migrationTools() []migrationTool {
	return []migrationTool{
		{migrationdir.Goose, gooseUp, gooseDown, gooseRecorded},
		{migrationdir.GolangMigrate, golangMigrateUp, golangMigrateDown, golangMigrateRecorded},
		{migrationdir.Dbmate, dbmateRun("migrate"), dbmateRun("rollback"), dbmateRecorded},
		{migrationdir.Tern, ternUp, ternDown, ternRecorded},
	}
}

// gooseDB opens dsn through database/sql for goose's Provider.
func gooseDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func gooseUp(t *testing.T, dir, dsn string) error {
	_, err := gooseProvider(t, gooseDB(t, dsn), dir).Up(context.Background())
	return err
}

func gooseDown(t *testing.T, dir, dsn string) error {
	_, err := gooseProvider(t, gooseDB(t, dsn), dir).Down(context.Background())
	return err
}

func gooseRecorded(t *testing.T, conn *pgx.Conn) string {
	var v int64
	if err := conn.QueryRow(context.Background(), "SELECT coalesce(max(version_id), 0) FROM public.goose_db_version").Scan(&v); err != nil {
		t.Fatalf("read goose's goose_db_version: %v", err)
	}
	if v == 0 {
		return "none"
	}
	return fmt.Sprint(v)
}

func golangMigrate(t *testing.T, dir, dsn string) *migrate.Migrate {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Scheme = "pgx5"
	m, err := migrate.New("file://"+dir, u.String())
	if err != nil {
		t.Fatalf("golang-migrate: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func golangMigrateUp(t *testing.T, dir, dsn string) error {
	if err := golangMigrate(t, dir, dsn).Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return err
	}
	return nil
}

func golangMigrateDown(t *testing.T, dir, dsn string) error {
	return golangMigrate(t, dir, dsn).Steps(-1)
}

func golangMigrateRecorded(t *testing.T, conn *pgx.Conn) string {
	var v int64
	var dirty bool
	err := conn.QueryRow(context.Background(), "SELECT version, dirty FROM public.schema_migrations").Scan(&v, &dirty)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "none"
	case err != nil:
		t.Fatalf("read golang-migrate's schema_migrations: %v", err)
	case dirty:
		return fmt.Sprintf("%d dirty", v)
	}
	return fmt.Sprint(v)
}

// dbmateCommand is the dbmate binary: $SFGEN_DBMATE, else dbmate on
// PATH, else where .ci/run installs the npm registry's dbmate package.
func dbmateCommand() (string, error) {
	if p := os.Getenv("SFGEN_DBMATE"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("dbmate"); err == nil {
		return p, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	dir := filepath.Join(cache, "sfgen", "dbmate")
	if m, _ := filepath.Glob(filepath.Join(dir, "node_modules", "@dbmate", "*", "bin", "dbmate")); len(m) > 0 {
		return m[0], nil
	}
	return "", fmt.Errorf("no dbmate: set SFGEN_DBMATE, put dbmate on PATH, or run npm install --prefix %s dbmate@2.36.0 (what .ci/run does)", dir)
}

func dbmateRun(command string) func(t *testing.T, dir, dsn string) error {
	return func(t *testing.T, dir, dsn string) error {
		t.Helper()
		bin, err := dbmateCommand()
		if err != nil {
			t.Skip(err)
		}
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if q.Get("sslmode") == "" {
			q.Set("sslmode", "disable")
		}
		u.RawQuery = q.Encode()
		out, err := exec.Command(bin, "--url", u.String(), "--migrations-dir", dir, "--no-dump-schema", command).CombinedOutput()
		if err != nil {
			return fmt.Errorf("dbmate %s: %w\n%s", command, err, out)
		}
		return nil
	}
}

func dbmateRecorded(t *testing.T, conn *pgx.Conn) string {
	var versions []string
	rows, err := conn.Query(context.Background(), "SELECT version FROM public.schema_migrations ORDER BY version")
	if err != nil {
		t.Fatalf("read dbmate's schema_migrations: %v", err)
	}
	for rows.Next() {
		var v string
		rows.Scan(&v)
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		return "none"
	}
	return strings.Join(versions, " ")
}

func tern(t *testing.T, dir, dsn string) (*ternmigrate.Migrator, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	m, err := ternmigrate.NewMigrator(ctx, conn, "public.schema_version")
	if err != nil {
		t.Fatalf("tern: %v", err)
	}
	if err := m.LoadMigrations(os.DirFS(dir)); err != nil {
		t.Fatalf("tern: load %s: %v", dir, err)
	}
	return m, conn
}

func ternUp(t *testing.T, dir, dsn string) error {
	m, _ := tern(t, dir, dsn)
	return m.Migrate(context.Background())
}

func ternDown(t *testing.T, dir, dsn string) error {
	m, _ := tern(t, dir, dsn)
	v, err := m.GetCurrentVersion(context.Background())
	if err != nil {
		return err
	}
	return m.MigrateTo(context.Background(), v-1)
}

func ternRecorded(t *testing.T, conn *pgx.Conn) string {
	var v int32
	if err := conn.QueryRow(context.Background(), "SELECT version FROM public.schema_version").Scan(&v); err != nil {
		t.Fatalf("read tern's schema_version: %v", err)
	}
	if v == 0 {
		return "none"
	}
	return fmt.Sprint(v)
}

// sfgenObjects counts what sfgen leaves in a database: schemas ids and
// ids_sfgen, and functions named snowflake_*.
func sfgenObjects(t *testing.T, conn *pgx.Conn) (schemas []string, functions int) {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, "SELECT nspname FROM pg_namespace WHERE nspname IN ('ids', 'ids_sfgen') ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		schemas = append(schemas, s)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_proc WHERE proname LIKE 'snowflake\_%'`).Scan(&functions); err != nil {
		t.Fatal(err)
	}
	return schemas, functions
}

// TestMigrationFormatsWithTheirTools writes sfgen's migrations with
// `sfgen migration --format F` and runs them with F's real tool: up on an
// empty database and an insert through the default snowflake_next_id();
// down back to nothing (no schema left); up again; and `sfgen migration`
// then has nothing to write.
func TestMigrationFormatsWithTheirTools(t *testing.T) {
	ctx := context.Background()
	for _, tool := range migrationTools() {
		t.Run(string(tool.format), func(t *testing.T) {
			dsn := pgtest.DSN(t)
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			dir := t.TempDir()
			code, out, errOut := sfgen(t, "migration", "--dir", dir, "--format", string(tool.format), "--sequential", "--schema", "ids", "--datacenter", "2", "--machine", "9")
			if code != 0 {
				t.Fatalf("sfgen migration: %d %s", code, errOut)
			}
			written := strings.Fields(out)
			if err := tool.up(t, dir, dsn); err != nil {
				t.Fatalf("up: %v", err)
			}
			if _, err := conn.Exec(ctx, "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), item text)"); err != nil {
				t.Fatal(err)
			}
			var dc, m, release int64
			if err := conn.QueryRow(ctx, "INSERT INTO orders (item) VALUES ('tea') RETURNING (id >> 17) & 31, (id >> 12) & 31, ids.snowflake_release()").Scan(&dc, &m, &release); err != nil || dc != 2 || m != 9 || release != sqlgen.Latest {
				t.Fatalf("insert with the default: node %d/%d, release %d, %v; want 2/9, %d", dc, m, release, err, sqlgen.Latest)
			}
			if got := tool.recorded(t, conn); got == "none" || strings.Contains(got, "dirty") {
				t.Errorf("after up, the tool records %q", got)
			}

			// Down while a column default uses snowflake_next_id() fails
			// whole; without it, down leaves nothing of sfgen's.
			applied := tool.recorded(t, conn)
			if err := tool.down(t, dir, dsn); err == nil {
				t.Errorf("down with orders' default on snowflake_next_id() succeeded")
			}
			if schemas, functions := sfgenObjects(t, conn); len(schemas) != 2 || functions == 0 {
				t.Errorf("after the failed down: schemas %v, %d functions; want all of sfgen still there", schemas, functions)
			}
			if tool.format == migrationdir.GolangMigrate {
				// golang-migrate records the version a down goes to, dirty,
				// before it runs the down, and keeps that when the down
				// fails: `migrate force` the version the database is at
				// (the down changed nothing) before it runs again.
				if got := tool.recorded(t, conn); got != "-1 dirty" {
					t.Errorf("golang-migrate records %q after a failed down; want -1 dirty", got)
				}
				var n int
				fmt.Sscan(applied, &n)
				if err := golangMigrate(t, dir, dsn).Force(n); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := conn.Exec(ctx, "DROP TABLE orders"); err != nil {
				t.Fatal(err)
			}
			if err := tool.down(t, dir, dsn); err != nil {
				t.Fatalf("down: %v", err)
			}
			if schemas, functions := sfgenObjects(t, conn); len(schemas) != 0 || functions != 0 {
				t.Errorf("after down: schemas %v, %d snowflake_ functions; want none", schemas, functions)
			}
			if got := tool.recorded(t, conn); got != "none" && got != "0" {
				t.Errorf("after down, the tool records %q; want nothing applied", got)
			}
			if err := tool.up(t, dir, dsn); err != nil {
				t.Fatalf("up again: %v", err)
			}
			if schemas, functions := sfgenObjects(t, conn); len(schemas) != 2 || functions == 0 {
				t.Errorf("after up again: schemas %v, %d functions", schemas, functions)
			}
			if code, out, errOut := sfgen(t, "migration", "--dir", dir); code != 0 || out != "" || !strings.Contains(errOut, "up to date") {
				t.Errorf("sfgen migration over %v = %d, %q, %q; want up to date", written, code, out, errOut)
			}
		})
	}
}

// releaseSevenFiles writes, in format f, the files an sfgen of release 7
// would have written had it had the format: release 7's Up, frozen as it
// shipped, under release 7's header.
func releaseSevenFiles(t *testing.T, dir string, f migrationdir.Format, o sqlgen.Options) {
	t.Helper()
	b, err := released.Upgrade(o, 7)
	if err != nil {
		t.Fatal(err)
	}
	if f == migrationdir.Goose {
		if err := os.WriteFile(filepath.Join(dir, "00001_sfgen_snowflake.sql"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	header, _, _ := strings.Cut(string(b), "\n\n")
	if !strings.Contains(header, "\n-- Release: 7") {
		t.Fatalf("release 7's header has no Release line:\n%s", header)
	}
	files, err := f.Files("sfgen_snowflake", []byte(header+"\n"), []byte(sqlgen.File{SQL: b}.Up()), []byte("SELECT 1;\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrationdir.WriteFiles(dir, files, migrationdir.Sequential, f.Width(), time.Time{}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrationFormatsUpgradeWithTheirTools: a directory at release 7
// in F's layout; `sfgen migration` (no --format: the directory's) adds the
// upgrade, numbered after what is there, F's tool applies it, and node,
// state and rows survive; the upgrade's down fails, saying it cannot be
// undone, and leaves the latest release in place.
func TestMigrationFormatsUpgradeWithTheirTools(t *testing.T) {
	ctx := context.Background()
	for _, tool := range migrationTools() {
		t.Run(string(tool.format), func(t *testing.T) {
			dsn := pgtest.DSN(t)
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			dir := t.TempDir()
			releaseSevenFiles(t, dir, tool.format, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 3, Machine: 4})
			if err := tool.up(t, dir, dsn); err != nil {
				t.Fatalf("up of release 7: %v", err)
			}
			release := func() (r int) {
				t.Helper()
				if err := conn.QueryRow(ctx, "SELECT ids.snowflake_release()").Scan(&r); err != nil {
					t.Fatal(err)
				}
				return r
			}
			if r := release(); r != 7 {
				t.Fatalf("release %d after release 7's file", r)
			}
			// Release 7's upgrade file, run on an empty database, installs
			// with node 0/0 (an upgrade keeps a node, it sets none).
			if _, err := conn.Exec(ctx, "SELECT ids.snowflake_set_node(3, 4)"); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), n int)"); err != nil {
				t.Fatal(err)
			}
			insert := func(n int) (maxID int64) {
				t.Helper()
				if err := conn.QueryRow(ctx, "WITH i AS (INSERT INTO orders (n) SELECT g FROM generate_series(1, $1) g RETURNING id) SELECT max(id) FROM i", n).Scan(&maxID); err != nil {
					t.Fatal(err)
				}
				return maxID
			}
			before := insert(500)

			code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential")
			if code != 0 || !strings.Contains(out, fmt.Sprintf("2_sfgen_release_%d.", sqlgen.Latest)) {
				t.Fatalf("sfgen migration = %d, %q, %q; want the upgrade as version 2", code, out, errOut)
			}
			if strings.Contains(readAll(t, strings.Fields(out)...), "+goose") != (tool.format == migrationdir.Goose) {
				t.Errorf("the %s upgrade has goose annotations", tool.format)
			}
			if err := tool.up(t, dir, dsn); err != nil {
				t.Fatalf("up of the upgrade: %v", err)
			}
			var node string
			conn.QueryRow(ctx, "SELECT datacenter_id || '/' || machine_id FROM ids.snowflake_node()").Scan(&node)
			if r := release(); r != sqlgen.Latest || node != "3/4" {
				t.Fatalf("after the upgrade: release %d, node %s; want %d, 3/4", r, node, sqlgen.Latest)
			}
			if after := insert(500); after <= before {
				t.Errorf("IDs after the upgrade (max %d) not above those before (max %d)", after, before)
			}
			recorded := tool.recorded(t, conn)
			err = tool.down(t, dir, dsn)
			if err == nil || !strings.Contains(err.Error(), "cannot be undone") {
				t.Errorf("down of the upgrade = %v; want it refused", err)
			}
			if r := release(); r != sqlgen.Latest {
				t.Errorf("after the refused down: release %d", r)
			}
			if got := tool.recorded(t, conn); got != recorded && tool.format != migrationdir.GolangMigrate {
				t.Errorf("after the refused down the tool records %q; before it %q", got, recorded)
			}
		})
	}
}

// TestMigrationFormatsFailWhole: the preflight refuses a schema where
// another role's object squats one of sfgen's names; the tool reports the
// failure, nothing of sfgen's is left, and the tool's version table does
// not record the migration as applied (golang-migrate records it dirty,
// its word for "failed here; fix it and force a version").
func TestMigrationFormatsFailWhole(t *testing.T) {
	ctx := context.Background()
	for _, tool := range migrationTools() {
		t.Run(string(tool.format), func(t *testing.T) {
			dsn := pgtest.DSN(t)
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "CREATE SCHEMA ids; CREATE TABLE ids.snowflake_state (squatter int)"); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if code, _, errOut := sfgen(t, "migration", "--dir", dir, "--format", string(tool.format), "--sequential", "--schema", "ids"); code != 0 {
				t.Fatalf("sfgen migration: %d %s", code, errOut)
			}
			err = tool.up(t, dir, dsn)
			if err == nil || !strings.Contains(err.Error(), "snowflake_state") {
				t.Fatalf("up over a squatted name = %v; want the preflight's refusal naming it", err)
			}
			if schemas, functions := sfgenObjects(t, conn); len(schemas) != 1 || functions != 0 {
				t.Errorf("after the refusal: schemas %v (want the squatter's ids only), %d snowflake_ functions", schemas, functions)
			}
			want := "none"
			if tool.format == migrationdir.GolangMigrate {
				want = "1 dirty"
			}
			if got := tool.recorded(t, conn); got != want {
				t.Errorf("after the refusal the tool records %q; want %q", got, want)
			}
		})
	}
}

// TestScriptUnderTools: `sfgen sql`, unchanged, as one migration of tools
// that run it in their transaction: it applies whole; refused by the
// preflight, or followed in the same migration by a statement that fails,
// it leaves nothing and nothing recorded (a script with a COMMIT of its
// own left its part committed: under dbmate recorded too, under tern not).
func TestScriptUnderTools(t *testing.T) {
	ctx := context.Background()
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range migrationTools() {
		if tool.format == migrationdir.GolangMigrate || tool.format == migrationdir.Goose {
			continue // one query (internal/sqlgen's tests run it so); goose needs its annotations
		}
		for _, mode := range []string{"applies", "squatted", "fails after"} {
			squat, failAfter := mode == "squatted", mode == "fails after"
			t.Run(string(tool.format)+"/"+mode, func(t *testing.T) {
				dsn := pgtest.DSN(t)
				conn, err := pgx.Connect(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(ctx)
				if squat {
					if _, err := conn.Exec(ctx, "CREATE SCHEMA ids; CREATE TABLE ids.snowflake_state (squatter int)"); err != nil {
						t.Fatal(err)
					}
				}
				dir := t.TempDir()
				body := string(script)
				if failAfter {
					body += "\nSELECT pg_catalog.int4div(1, 0);\n"
				}
				var content string
				switch tool.format {
				case migrationdir.Dbmate:
					content = "-- migrate:up\n" + body + "\n-- migrate:down\n"
				case migrationdir.Tern:
					content = body
				}
				if err := os.WriteFile(filepath.Join(dir, "001_snowflake.sql"), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				err = tool.up(t, dir, dsn)
				schemas, functions := sfgenObjects(t, conn)
				recorded := tool.recorded(t, conn)
				if squat || failAfter {
					want := 0
					if squat {
						want = 1 // the squatter's ids
					}
					if err == nil || len(schemas) != want || functions != 0 || recorded != "none" {
						t.Errorf("%s: up = %v; schemas %v, %d functions, recorded %q; want it failed, nothing left or recorded", mode, err, schemas, functions, recorded)
					}
					return
				}
				if err != nil || len(schemas) != 2 || functions == 0 || recorded == "none" {
					t.Errorf("up = %v; schemas %v, %d functions, recorded %q; want it applied and recorded", err, schemas, functions, recorded)
				}
			})
		}
	}
}

func readAll(t *testing.T, paths ...string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range paths {
		c, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(c)
	}
	return b.String()
}

// TestMigrationFormatUsage: what `sfgen migration --format` refuses, with
// exit status 2, writing nothing.
func TestMigrationFormatUsage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []string // earlier runs' arguments, after --dir
		args   []string
		want   string
	}{
		{"unknown", nil, []string{"--format", "flyway"}, `--format: unknown migration format "flyway"; want one of goose, golang-migrate, dbmate, tern`},
		{"another tool's directory", []string{"--format", "tern"}, []string{"--format", "dbmate"}, "--format dbmate conflicts with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.before != nil {
				if code, _, errOut := sfgen(t, append([]string{"migration", "--dir", dir}, tc.before...)...); code != 0 {
					t.Fatalf("first run: %d %s", code, errOut)
				}
			}
			entries, _ := os.ReadDir(dir)
			code, out, errOut := sfgen(t, append([]string{"migration", "--dir", dir}, tc.args...)...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("sfgen migration %q = %d, %q, %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
			}
			if after, _ := os.ReadDir(dir); len(after) != len(entries) {
				t.Errorf("a refused run wrote %d files", len(after)-len(entries))
			}
		})
	}
}
