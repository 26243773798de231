package main

import (
	"context"
	"fmt"
	snowflake "github.com/sfgen/sfgen"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// gooseCLI builds the goose command at the version go.mod requires, with
// only its PostgreSQL driver, into a temporary directory.
func gooseCLI(t *testing.T) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github.com/pressly/goose/v3 (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/pressly/goose/v3")
	}
	bin := t.TempDir()
	cmd := exec.Command("go", "install",
		"-tags=no_clickhouse no_libsql no_mssql no_mysql no_sqlite3 no_vertica no_ydb no_starrocks no_turso",
		"github.com/pressly/goose/v3/cmd/goose@"+string(m[1]))
	cmd.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build goose %s: %v\n%s", m[1], err, out)
	}
	return filepath.Join(bin, "goose")
}

// gooseIn returns a function that runs the goose command on dir against
// dsn, with its version table named table, and fails the test on error.
func gooseIn(t *testing.T, goose, dir, table, dsn string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goose, append([]string{"-dir", dir, "-table", table, "postgres", dsn}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("goose %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
}

// TestGooseCommandRunsMigration writes a migration with `sfgen migration`
// into an application's directory and runs it with the real goose
// command: up, down, up.
func TestGooseCommandRunsMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the goose command")
	}
	goose := gooseCLI(t)
	dsn := pgtest.DSN(t)
	conn, schema := testSchema(t, dsn)
	ctx := context.Background()

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "00001_users.sql"), []byte("-- +goose Up\nCREATE TABLE "+schema+".users (id bigint PRIMARY KEY);\n-- +goose Down\nDROP TABLE "+schema+".users;\n"), 0o644)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential", "--schema", schema, "--datacenter", "2", "--machine", "9")
	if code != 0 {
		t.Fatalf("sfgen migration: %d %s", code, errOut)
	}
	if want := filepath.Join(dir, "00002_sfgen_snowflake.sql"); strings.TrimSpace(out) != want {
		t.Fatalf("sfgen migration wrote %q, want %s", out, want)
	}

	runGoose := gooseIn(t, goose, dir, schema+".goose_db_version", dsn)
	functions := func() int {
		var n int
		conn.QueryRow(ctx, `SELECT count(*) FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname LIKE 'snowflake\_%'`, schema).Scan(&n)
		return n
	}
	runGoose("up")
	up := functions()
	var id, dc, m int64
	if err := conn.QueryRow(ctx, "SELECT "+schema+".snowflake_compose(1288834975657, 1, 1, 0)").Scan(&id); err != nil || id != 4194439168 {
		t.Fatalf("after goose up, worked example = %d, %v", id, err)
	}
	if err := conn.QueryRow(ctx, "INSERT INTO "+schema+".users VALUES ("+schema+".snowflake_next_id()) RETURNING (id >> 17) & 31, (id >> 12) & 31").Scan(&dc, &m); err != nil || dc != 2 || m != 9 {
		t.Fatalf("snowflake_next_id() node = %d/%d, %v; want 2/9 from the migration", dc, m, err)
	}
	out = runGoose("down")
	if !strings.Contains(out, "00002_sfgen_snowflake.sql") {
		t.Errorf("goose down did not roll back sfgen's migration:\n%s", out)
	}
	if n := functions(); n != 0 {
		t.Errorf("after goose down, %d snowflake_ functions remain", n)
	}
	runGoose("up")
	if n := functions(); n != up || up == 0 {
		t.Errorf("after goose up again, %d functions; first up made %d", n, up)
	}
	if out := runGoose("status"); !strings.Contains(out, "00002_sfgen_snowflake.sql") {
		t.Errorf("goose status does not list the migration:\n%s", out)
	}
}

// TestGooseCommandUpgradesReleaseOne is an application that applied
// release 1's migration with the goose command: `sfgen migration` adds
// one upgrade to the latest release, goose applies it, and node, state
// and rows survive; goose down of the upgrade is refused (it cannot be
// undone) and leaves the latest release making IDs.
func TestGooseCommandUpgradesReleaseOne(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the goose command")
	}
	goose := gooseCLI(t)
	dsn := pgtest.DSN(t)
	conn, schema := testSchema(t, dsn)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := released.Migrations(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, Datacenter: 2, Machine: 9})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "00001_sfgen_snowflake.sql"), files[0].SQL, 0o644) // as release 1's sfgen wrote it
	os.WriteFile(filepath.Join(dir, "00002_users.sql"), []byte("-- +goose Up\nCREATE TABLE "+schema+".users (id bigint PRIMARY KEY DEFAULT "+schema+".snowflake_next_id(), n int);\n-- +goose Down\nDROP TABLE "+schema+".users;\n"), 0o644)
	runGoose := gooseIn(t, goose, dir, schema+".goose_db_version", dsn)
	release := func() int {
		t.Helper()
		in, err := catalog.Inspect(ctx, catalog.PGX(conn), mustSchema(t, schema))
		if err != nil {
			t.Fatal(err)
		}
		return in.Release
	}
	insert := func(n int) (maxID int64) {
		t.Helper()
		if err := conn.QueryRow(ctx, "WITH i AS (INSERT INTO "+schema+".users (n) SELECT g FROM generate_series(1, $1) g RETURNING id) SELECT max(id) FROM i", n).Scan(&maxID); err != nil {
			t.Fatal(err)
		}
		return maxID
	}
	node := func() string {
		var dc, m int
		conn.QueryRow(ctx, "SELECT datacenter_id, machine_id FROM "+schema+".snowflake_node()").Scan(&dc, &m)
		return fmt.Sprintf("%d/%d", dc, m)
	}

	runGoose("up")
	if r := release(); r != 1 {
		t.Fatalf("after goose up of release 1's file, release %d", r)
	}
	before := insert(1000)

	code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential")
	// One file from release 1 to the latest, version 3.
	upgrade := fmt.Sprintf("00003_sfgen_release_%d.sql", sqlgen.Latest)
	if code != 0 || out != filepath.Join(dir, upgrade)+"\n" || errOut != "" {
		t.Fatalf("sfgen migration = %d, %q, %q; want %q", code, out, errOut, filepath.Join(dir, upgrade))
	}
	runGoose("up")
	if r, n := release(), node(); r != sqlgen.Latest || n != "2/9" {
		t.Fatalf("after the upgrade: release %d, node %s; want %d, 2/9", r, n, sqlgen.Latest)
	}
	after := insert(1000)
	if after <= before {
		t.Errorf("IDs after the upgrade (max %d) are not above those before (max %d)", after, before)
	}
	var rows, distinct int
	conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM "+schema+".users").Scan(&rows, &distinct)
	if rows != 2000 || distinct != 2000 {
		t.Errorf("users has %d rows, %d distinct IDs; want 2000", rows, distinct)
	}

	// The upgrade cannot be undone: goose down fails, saying so, and the
	// schema stays at the latest release, making IDs.
	cmd := exec.Command(goose, "-dir", dir, "-table", schema+".goose_db_version", "postgres", dsn, "down")
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "cannot be undone") || !strings.Contains(string(b), upgrade) {
		t.Errorf("goose down of the upgrade = %v; want it refused, naming %s:\n%s", err, upgrade, b)
	}
	if r, n := release(), node(); r != sqlgen.Latest || n != "2/9" {
		t.Errorf("after the refused goose down: release %d, node %s; want %d, 2/9", r, n, sqlgen.Latest)
	}
	if down := insert(10); down <= after {
		t.Errorf("IDs after the refused goose down (max %d) are not above those before it (max %d)", down, after)
	}
	runGoose("up")
	if r := release(); r != sqlgen.Latest {
		t.Errorf("after goose up again: release %d; want %d", r, sqlgen.Latest)
	}
	if code, out, errOut := sfgen(t, "migration", "--dir", dir); code != 0 || out != "" || !strings.Contains(errOut, "up to date") {
		t.Errorf("sfgen migration at release %d = %d, %q, %q; want up to date", sqlgen.Latest, code, out, errOut)
	}
}

func mustSchema(t testing.TB, name string) catalog.Schema {
	t.Helper()
	s, err := catalog.ParseSchema(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
