package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/migrationdir"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// gooseProvider runs the migrations in dir on db with the goose library,
// as an application's own goose would.
func gooseProvider(t *testing.T, db *sql.DB, dir string) *goose.Provider {
	t.Helper()
	p, err := goose.NewProvider(goose.DialectPostgres, db, os.DirFS(dir), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writtenFiles returns the files 'sfgen migration' printed, one a line.
func writtenFiles(t *testing.T, out string) []string {
	t.Helper()
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			names = append(names, filepath.Base(l))
		}
	}
	return names
}

func testDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestMigrationNative: 'sfgen migration --native' writes the install and
// a native switch, which goose applies (snowflake_next_id() is then the C
// function of the library 'sfgen build-native' built there, and its IDs
// pass verify); goose down puts the SQL generator back and up switches
// again; and --native=false writes the switch back.
func TestMigrationNative(t *testing.T) {
	nativeHere(t)
	libDir := serverReadableDir(t)
	code, out, errOut := sfgen(t, "build-native", "--native-dir", libDir)
	if code != 0 || !strings.HasPrefix(out, libDir+"/sfgen-") {
		t.Fatalf("build-native = %d, %q, %q", code, out, errOut)
	}
	lib := strings.TrimSpace(out)
	dir := t.TempDir()
	code, out, errOut = sfgen(t, "migration", "--dir", dir, "--sequential", "--native", "--native-dir", libDir)
	if names := writtenFiles(t, out); code != 0 || len(names) != 2 || names[0] != "00001_sfgen_snowflake.sql" || names[1] != "00002_sfgen_native.sql" {
		t.Fatalf("migration --native = %d, %q, %q; want the install and the native switch", code, out, errOut)
	}
	found, err := migrationdir.Find(dir)
	if err != nil || len(found) != 2 || found[1].Generator != "native" || found[1].Library != lib || found[1].Release != sqlgen.Latest {
		t.Fatalf("Find after migration --native = %+v, %v; want the native switch at release %d naming %s", found, err, sqlgen.Latest, lib)
	}

	dsn := pgtest.DSN(t)
	db := testDB(t, dsn)
	ctx := context.Background()
	p := gooseProvider(t, db, dir)
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("goose up: %v", err)
	}
	if lang := generatorLanguage(t, db); lang != "c" {
		t.Fatalf("after goose up, snowflake_next_id() is %s, want the C one", lang)
	}
	var probin string
	if err := db.QueryRow(`SELECT probin FROM pg_proc WHERE oid = 'public.snowflake_next_id_c(integer)'::regprocedure`).Scan(&probin); err != nil || probin != lib {
		t.Fatalf("snowflake_next_id_c(integer)'s library: %q, %v; want %s", probin, err, lib)
	}
	// No node was chosen: the C function refuses as the SQL one does.
	if _, err := db.Exec(`SELECT public.snowflake_next_id()`); !isSQLState(err, "SF201") {
		t.Fatalf("with no node set: %v; want SF201", err)
	}
	if code, out, errOut := sfgen(t, "node", "--dsn", dsn, "--datacenter", "5", "--machine", "6"); code != 0 {
		t.Fatalf("node = %d, %q, %q", code, out, errOut)
	}
	var id int64
	if err := db.QueryRow(`SELECT public.snowflake_next_id()`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if parts, err := snowflake.Decompose(snowflake.ID(id)); err != nil || parts.Datacenter != 5 || parts.Machine != 6 {
		t.Fatalf("native ID %d = %+v, %v; want node 5/6", id, parts, err)
	}
	if code, out, _ := sfgen(t, "verify", "--dsn", dsn, "--count", "2000"); code != 0 {
		t.Errorf("verify after the native migration = %d\n%s", code, out)
	}
	if _, err := p.Down(ctx); err != nil {
		t.Fatalf("goose down: %v", err)
	}
	if lang := generatorLanguage(t, db); lang != "sql" {
		t.Fatalf("after goose down of the native switch, snowflake_next_id() is %s, want the SQL one", lang)
	}
	var left int
	if err := db.QueryRow(`SELECT count(*) FROM pg_proc WHERE proname = 'snowflake_next_id_c'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("after goose down of the native switch, %d snowflake_next_id_c() functions (%v); want none", left, err)
	}
	var next int64
	if err := db.QueryRow(`SELECT public.snowflake_next_id()`).Scan(&next); err != nil || next <= id {
		t.Fatalf("the SQL generator after goose down: %d, %v; want a node-kept ID above %d", next, err, id)
	}
	if parts, _ := snowflake.Decompose(snowflake.ID(next)); parts.Datacenter != 5 || parts.Machine != 6 {
		t.Fatalf("SQL ID after goose down %d = %+v; want node 5/6", next, parts)
	}
	if _, err := p.Up(ctx); err != nil || generatorLanguage(t, db) != "c" {
		t.Fatalf("goose up again: %v, %s", err, generatorLanguage(t, db))
	}

	// Again: nothing to write. --native=false: the switch back.
	if code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential", "--native", "--native-dir", libDir); code != 0 || out != "" || !strings.Contains(errOut, "up to date") {
		t.Errorf("migration --native again = %d, %q, %q; want nothing written", code, out, errOut)
	}
	code, out, errOut = sfgen(t, "migration", "--dir", dir, "--sequential", "--native=false")
	if names := writtenFiles(t, out); code != 0 || len(names) != 1 || names[0] != "00003_sfgen_sql_generator.sql" {
		t.Fatalf("migration --native=false = %d, %q, %q", code, out, errOut)
	}
	p = gooseProvider(t, db, dir) // with the new file
	if _, err := p.Up(ctx); err != nil || generatorLanguage(t, db) != "sql" {
		t.Fatalf("goose up of the switch back: %v, %s; want the SQL generator", err, generatorLanguage(t, db))
	}
	if _, err := p.Down(ctx); err != nil || generatorLanguage(t, db) != "c" {
		t.Fatalf("goose down of the switch back: %v, %s; want the C generator", err, generatorLanguage(t, db))
	}
}

func isSQLState(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// noticeDB opens dsn with the notices (warnings too) the server sends
// collected into *notices.
func noticeDB(t *testing.T, dsn string, notices *[]string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { *notices = append(*notices, n.Severity+": "+n.Message) }
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestMigrationNativeNotHere: where the server cannot load the library
// (not built there), the native switch fails with SF301, naming the
// library and the build command, and the database is as it was (the SQL
// generator); written with --native-optional, it warns so and keeps the
// SQL generator.
func TestMigrationNativeNotHere(t *testing.T) {
	libDir := serverReadableDir(t) // nothing built in it
	for _, optional := range []bool{false, true} {
		dir := t.TempDir()
		args := []string{"migration", "--dir", dir, "--sequential", "--native", "--native-dir", libDir}
		if optional {
			args = append(args, "--native-optional")
		}
		if code, out, errOut := sfgen(t, args...); code != 0 || len(writtenFiles(t, out)) != 2 {
			t.Fatalf("%v = %d, %q, %q", args, code, out, errOut)
		}
		dsn := pgtest.DSN(t)
		var notices []string
		db := noticeDB(t, dsn, &notices)
		ctx := context.Background()
		p := gooseProvider(t, db, dir)
		if _, err := p.UpByOne(ctx); err != nil { // the install
			t.Fatal(err)
		}
		_, err := p.UpByOne(ctx)
		switch {
		case !optional && !isSQLState(err, "SF301"):
			t.Fatalf("the native switch where the library is missing: %v; want SF301", err)
		case !optional && (!strings.Contains(err.Error(), "cannot load "+libDir+"/sfgen-") || !strings.Contains(err.Error(), "sfgen build-native --native-dir "+libDir)):
			t.Errorf("the native switch's error %q: want the library and the build command named", err)
		case optional && err != nil:
			t.Fatalf("the optional native switch where the library is missing: %v; want a warning", err)
		}
		if lang := generatorLanguage(t, db); lang != "sql" {
			t.Fatalf("after the native switch failed (optional %v), snowflake_next_id() is %s, want the SQL one", optional, lang)
		}
		if v, _ := p.GetDBVersion(ctx); optional != (v == 2) {
			t.Errorf("optional %v: goose at version %d after the native switch", optional, v)
		}
		warned := strings.Contains(strings.Join(notices, "\n"), "WARNING: sfgen: the native generator was not installed into schema \"public\", and snowflake_next_id() stays the SQL generator: this server cannot load "+libDir+"/sfgen-")
		if optional != warned {
			t.Errorf("optional %v: notices %q", optional, notices)
		}
	}
}

// TestMigrationNativeOtherLayout: a library built for another layout than
// the schema's (Discord's at the path a Twitter migration names) is
// refused, SF302, whether the switch is optional or not, and the SQL
// generator stays.
func TestMigrationNativeOtherLayout(t *testing.T) {
	nativeHere(t)
	libDir := serverReadableDir(t)
	code, out, _ := sfgen(t, "build-native", "--native-dir", libDir, "--layout", "discord")
	if code != 0 {
		t.Fatalf("build-native --layout discord = %d", code)
	}
	discordLib := strings.TrimSpace(out)
	for _, optional := range []bool{false, true} {
		dir := t.TempDir()
		files, err := released.Migrations(sqlgen.Options{Layout: snowflake.Twitter()})
		if err != nil {
			t.Fatal(err)
		}
		last := files[len(files)-1]
		if err := os.WriteFile(filepath.Join(dir, last.Name), last.SQL, 0o644); err != nil {
			t.Fatal(err)
		}
		up, err := native.MigrationUp(native.MigrationOptions{Schema: "public", Layout: snowflake.Twitter(), Release: sqlgen.Latest, Library: discordLib, Optional: optional})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00009_switch.sql"), []byte("-- +goose Up\n"+up+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		db := testDB(t, pgtest.DSN(t))
		ctx := context.Background()
		p := gooseProvider(t, db, dir)
		if _, err := p.UpByOne(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := p.UpByOne(ctx); !isSQLState(err, "SF302") || !strings.Contains(err.Error(), "was built for layout epoch=1420070400000") {
			t.Errorf("optional %v: the switch to a Discord library in a Twitter schema: %v; want SF302 naming both layouts", optional, err)
		}
		if lang := generatorLanguage(t, db); lang != "sql" {
			t.Errorf("optional %v: after the refused switch, snowflake_next_id() is %s", optional, lang)
		}
	}
}

// TestMigrationVersionsOfOneRun: the files one run writes with timestamp
// versions (the upgrade from release 1, a native switch) get versions a
// second apart, in order, however fast the run.
func TestMigrationVersionsOfOneRun(t *testing.T) {
	dir := t.TempDir()
	files, err := released.Migrations(sqlgen.Options{Layout: snowflake.Twitter()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "20200101000000_sfgen_snowflake.sql"), files[0].SQL, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "migration", "--dir", dir, "--native", "--native-dir", "/srv/sfgen")
	names := writtenFiles(t, out)
	if code != 0 || len(names) != 2 {
		t.Fatalf("migration over release 1 = %d, %q, %q; want 2 files, the upgrade and the switch", code, out, errOut)
	}
	for i := 1; i < len(names); i++ {
		if names[i][:14] <= names[i-1][:14] {
			t.Errorf("%s is not after %s", names[i], names[i-1])
		}
	}
	found, err := migrationdir.Find(dir)
	if err != nil || len(found) != 3 {
		t.Fatalf("Find = %d files, %v", len(found), err)
	}
}

// TestMigrationNativeAcrossUpgrade: a directory at release 2 whose native
// switch (at release 2) ran gets, from 'sfgen migration', the upgrade to
// the latest release and, since that puts the SQL generator back, the
// native switch again, with the same library: after goose up the schema
// is at the latest release with the C generator.
func TestMigrationNativeAcrossUpgrade(t *testing.T) {
	nativeHere(t)
	first := native.Releases[0]
	if first >= sqlgen.Latest {
		t.Skipf("the native generator follows release %d, the latest: no release upgrades over it yet", first)
	}
	libDir := serverReadableDir(t)
	code, out, _ := sfgen(t, "build-native", "--native-dir", libDir)
	if code != 0 {
		t.Fatalf("build-native = %d", code)
	}
	lib := strings.TrimSpace(out)
	dir := t.TempDir()
	files, err := released.Migrations(sqlgen.Options{Layout: snowflake.Twitter()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files[:first] {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.SQL, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen, err := released.Generator(sqlgen.Options{Layout: snowflake.Twitter()}, first)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := native.MigrationFile(native.MigrationOptions{Schema: "public", Layout: snowflake.Twitter(), Release: first, Library: lib}, gen)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d", first+1)+migrationdir.NativeSuffix), sw, 0o644); err != nil {
		t.Fatal(err)
	}
	dsn := pgtest.DSN(t)
	db := testDB(t, dsn)
	ctx := context.Background()
	if _, err := gooseProvider(t, db, dir).Up(ctx); err != nil {
		t.Fatalf("goose up to release 2 and its native switch: %v", err)
	}
	if lang := generatorLanguage(t, db); lang != "c" {
		t.Fatalf("at release 2 after the native switch: %s", lang)
	}
	code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential")
	// One upgrade file to the latest release after the switch (version
	// first+2), then the native switch again.
	want := []string{
		fmt.Sprintf("%05d_sfgen_release_%d.sql", first+2, sqlgen.Latest),
		fmt.Sprintf("%05d%s", first+3, migrationdir.NativeSuffix),
	}
	if names := writtenFiles(t, out); code != 0 || strings.Join(names, " ") != strings.Join(want, " ") || !strings.Contains(errOut, "again") {
		t.Fatalf("migration over a native directory at release 2 = %d, %q, %q; want the upgrade and the native switch again, %v", code, out, errOut, want)
	}
	found, _ := migrationdir.Find(dir)
	if last := found[len(found)-1]; last.Library != lib || last.Release != sqlgen.Latest {
		t.Fatalf("the new native switch: %+v; want release %d, library %s", last, sqlgen.Latest, lib)
	}
	if _, err := gooseProvider(t, db, dir).Up(ctx); err != nil {
		t.Fatalf("goose up: %v", err)
	}
	var release int
	if err := db.QueryRow(`SELECT public.snowflake_release()`).Scan(&release); err != nil || release != sqlgen.Latest {
		t.Fatalf("release after the upgrade: %d, %v", release, err)
	}
	if lang := generatorLanguage(t, db); lang != "c" {
		t.Fatalf("after the upgrade and the native switch again, snowflake_next_id() is %s, want the C one", lang)
	}
}

// TestMigrationNativeFlags: the native flags' usage errors.
func TestMigrationNativeFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--native"}, "--native needs --native-dir"},
		{[]string{"--native", "--native-dir", "rel/dir"}, "is not absolute"},
		{[]string{"--native-dir", "/x"}, "--native-dir goes with --native"},
		{[]string{"--native-optional"}, "--native-optional goes with --native"},
		{[]string{"--native=false"}, "has no sfgen migrations"},
	} {
		code, out, errOut := sfgen(t, append([]string{"migration", "--dir", dir}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("migration %v = %d, %q, %q; want exit 2 saying %q", c.args, code, out, errOut, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused runs wrote %d files", len(entries))
	}
}

// TestMigrationNativeOwner: the install migration applied by the
// application's own role (not a superuser), the native switch by a
// superuser: the C function belongs to the application's role, who owns
// the sfgen objects it uses, so it makes IDs, and that role's goose down
// switches back. The role gets what a deployer gives it (docs/releases.md,
// "What the installing role needs"): CREATE on public, where it installs,
// and, from release 4, CREATE on the database, for the private schema
// public_sfgen that keeps the leases (SF106 names that GRANT).
func TestMigrationNativeOwner(t *testing.T) {
	nativeHere(t)
	libDir := serverReadableDir(t)
	if code, _, _ := sfgen(t, "build-native", "--native-dir", libDir); code != 0 {
		t.Fatalf("build-native = %d", code)
	}
	dir := t.TempDir()
	if code, out, errOut := sfgen(t, "migration", "--dir", dir, "--sequential", "--datacenter", "1", "--machine", "2", "--native", "--native-dir", libDir); code != 0 {
		t.Fatalf("migration = %d, %q, %q", code, out, errOut)
	}
	dsn := pgtest.DSN(t)
	super := testDB(t, dsn)
	owner, ownerDSN := pgtest.LoginRole(t, dsn, "mig_owner", "")
	if _, err := super.Exec("GRANT CREATE ON SCHEMA public TO " + owner); err != nil {
		t.Fatal(err)
	}
	var database string
	if err := super.QueryRow(`SELECT pg_catalog.current_database()`).Scan(&database); err != nil {
		t.Fatal(err)
	}
	if _, err := super.Exec("GRANT CREATE ON DATABASE " + pgx.Identifier{database}.Sanitize() + " TO " + owner); err != nil {
		t.Fatal(err)
	}
	app := testDB(t, ownerDSN)
	ctx := context.Background()
	if _, err := gooseProvider(t, app, dir).UpByOne(ctx); err != nil {
		t.Fatalf("the install, as %s: %v", owner, err)
	}
	if _, err := gooseProvider(t, super, dir).UpByOne(ctx); err != nil {
		t.Fatalf("the native switch, as a superuser: %v", err)
	}
	var fnOwner string
	if err := super.QueryRow(`SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'public.snowflake_next_id()'::regprocedure`).Scan(&fnOwner); err != nil || fnOwner != owner {
		t.Fatalf("snowflake_next_id() is owned by %q (%v); want %s, who owns the other sfgen objects", fnOwner, err, owner)
	}
	var id int64
	if err := app.QueryRow(`SELECT public.snowflake_next_id()`).Scan(&id); err != nil {
		t.Fatalf("the native generator, as %s: %v", owner, err)
	}
	if generatorLanguage(t, app) != "c" {
		t.Fatal("the switch did not make the C function")
	}
	if _, err := gooseProvider(t, app, dir).Down(ctx); err != nil || generatorLanguage(t, app) != "sql" {
		t.Fatalf("goose down of the native switch, as %s: %v; want the SQL generator back", owner, err)
	}
}

// TestBuildNative: build-native prints the library's path (as JSON with
// --json, with the layout), refuses a relative or missing --native-dir
// (exit 2), and says when it cannot build here (exit 1).
func TestBuildNative(t *testing.T) {
	for _, args := range [][]string{{"--native-dir", "rel/dir"}} {
		if code, out, errOut := sfgen(t, append([]string{"build-native"}, args...)...); code != 2 || out != "" || !strings.Contains(errOut, "--native-dir") {
			t.Errorf("build-native %v = %d, %q, %q; want exit 2 naming --native-dir", args, code, out, errOut)
		}
	}
	code, out, errOut := sfgen(t, "build-native", "--native-dir", t.TempDir(), "--pg-config", "/nonexistent/pg_config")
	if code != 1 || out != "" || !strings.Contains(errOut, "it cannot be built on this machine") || !strings.Contains(errOut, "/nonexistent/pg_config") {
		t.Errorf("build-native with a missing pg_config = %d, %q, %q; want exit 1 saying it cannot be built here", code, out, errOut)
	}
	nativeHere(t)
	dir := serverReadableDir(t)
	code, out, errOut = sfgen(t, "build-native", "--native-dir", dir, "--layout", "discord", "--json")
	var got struct{ Library, Layout string }
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Layout != snowflake.Discord().String() ||
		!strings.HasPrefix(got.Library, dir+"/sfgen-") || !strings.HasSuffix(got.Library, "/"+native.Library) {
		t.Fatalf("build-native --json = %d, %q (%v), %q", code, out, err, errOut)
	}
	if _, err := os.Stat(got.Library); err != nil {
		t.Errorf("the library it names: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, native.PortableName(snowflake.Discord())+".so")); err != nil || !sameFileBytes(t, got.Library, b) {
		t.Errorf("no copy of the library under its portable name in %s: %v", dir, err)
	}

	// Without --native-dir: into the server's $libdir, which here a
	// pg_config of our own names (it passes every other question on).
	real, err := native.FindPGConfig()
	if err != nil {
		t.Fatal(err)
	}
	libdir := serverReadableDir(t)
	pgConfig := filepath.Join(serverReadableDir(t), "pg_config")
	script := "#!/bin/sh\nif [ \"$1\" = --pkglibdir ]; then echo " + libdir + "; exit 0; fi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(pgConfig, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = sfgen(t, "build-native", "--pg-config", pgConfig)
	if want := filepath.Join(libdir, native.PortableName(snowflake.Twitter())+".so"); code != 0 || out != want+"\n" {
		t.Fatalf("build-native into $libdir = %d, %q, %q; want %s", code, out, errOut, want)
	}
	if entries, _ := os.ReadDir(libdir); len(entries) != 1 {
		t.Errorf("$libdir holds %v; want the library alone", entries)
	}
}

// sameFileBytes reports whether file path holds b.
func sameFileBytes(t *testing.T, path string, b []byte) bool {
	t.Helper()
	a, err := os.ReadFile(path)
	return err == nil && string(a) == string(b)
}
