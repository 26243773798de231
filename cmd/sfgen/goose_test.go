package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
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

	runGoose := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goose, append([]string{"-dir", dir, "-table", schema + ".goose_db_version", "postgres", dsn}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("goose %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
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
