package main

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// nativeHere skips unless the native generator can be built here and the
// test server can load a file of this machine's; under CI=true a missing
// toolchain fails instead (CI's first run has it).
func nativeHere(t *testing.T) {
	t.Helper()
	if why := pgcluster.NoDevelopmentFiles(); why != "" {
		t.Skip(why)
	}
	if pgtest.External() {
		if _, err := pgcluster.FindBinDir(""); err != nil {
			t.Skipf("the native generator is loaded by the server from this machine's files, and $%s's server has no binaries here: %v", pgtest.EnvVar, err)
		}
	}
	if _, err := native.FindPGConfig(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no pg_config to build the native generator: %v", err)
		}
		t.Skipf("no pg_config to build the native generator: %v", err)
	}
}

// serverReadableDir returns a new directory that the server's OS user can
// read (t.TempDir's parent is not), removed at the end of the test.
func serverReadableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sfgen-native-cmd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// generatorLanguage returns the language public.snowflake_next_id()
// makes IDs in: that of the function itself, or "c" when it is the
// native generator's wrapper over its C function (native.ShapeWrapped),
// "missing" when that C function is not there.
func generatorLanguage(t *testing.T, db *sql.DB) string {
	t.Helper()
	var lang string
	if err := db.QueryRow(`SELECT CASE WHEN p.prosrc = 'SELECT "public".snowflake_next_id_c(0)' AND l.lanname = 'sql'
			THEN COALESCE((SELECT c.lanname FROM pg_catalog.pg_proc q JOIN pg_catalog.pg_language c ON c.oid = q.prolang
				WHERE q.oid = to_regprocedure('public.snowflake_next_id_c(integer)')), 'missing')
			ELSE l.lanname END
		FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_language l ON l.oid = p.prolang
		WHERE p.oid = 'public.snowflake_next_id()'::pg_catalog.regprocedure`).Scan(&lang); err != nil {
		t.Fatal(err)
	}
	return lang
}

// TestInstallNative: install --native switches snowflake_next_id() to C,
// whose IDs carry the node and pass verify; install again keeps it;
// --native=false puts the SQL generator back; and an upgrade from release
// 2, whose migration replaces snowflake_next_id(), installs the native one
// again from the library it used.
func TestInstallNative(t *testing.T) {
	nativeHere(t)
	dsn := pgtest.DSN(t)
	dir := serverReadableDir(t)
	code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--datacenter", "3", "--machine", "4", "--native", "--native-dir", dir)
	if code != 0 || !strings.Contains(out, "snowflake_next_id() is the native generator ("+dir+"/sfgen-") {
		t.Fatalf("install --native = %d, %q, %q", code, out, errOut)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if lang := generatorLanguage(t, db); lang != "c" {
		t.Fatalf("after install --native, snowflake_next_id() is %s", lang)
	}
	var id int64
	if err := db.QueryRow(`SELECT public.snowflake_next_id()`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if p, err := snowflake.Decompose(snowflake.ID(id)); err != nil || p.Datacenter != 3 || p.Machine != 4 {
		t.Errorf("native ID %d = %+v, %v; want node 3/4", id, p, err)
	}
	if code, out, _ := sfgen(t, "verify", "--dsn", dsn, "--count", "2000"); code != 0 {
		t.Errorf("verify on the native generator = %d\n%s", code, out)
	}
	if code, out, _ := sfgen(t, "install", "--dsn", dsn); code != 0 || generatorLanguage(t, db) != "c" {
		t.Errorf("install again without --native = %d, %q; the native generator should stay", code, out)
	}
	code, out, errOut = sfgen(t, "install", "--dsn", dsn, "--native=false")
	if code != 0 || !strings.Contains(out, "snowflake_next_id() is the SQL generator again") || generatorLanguage(t, db) != "sql" {
		t.Fatalf("install --native=false = %d, %q, %q", code, out, errOut)
	}
	if err := db.QueryRow(`SELECT public.snowflake_next_id()`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if p, _ := snowflake.Decompose(snowflake.ID(id)); p.Datacenter != 3 || p.Machine != 4 {
		t.Errorf("SQL ID after switching back %d = %+v; want node 3/4", id, p)
	}
}

// TestInstallNativeAcrossUpgrade: a schema at release 2 with the native
// generator, upgraded by install (whose release 3 migration replaces
// snowflake_next_id() by the SQL one), gets the native one again, from
// the same library.
func TestInstallNativeAcrossUpgrade(t *testing.T) {
	nativeHere(t)
	first := native.Releases[0]
	if first >= sqlgen.Latest {
		t.Skipf("the native generator follows release %d, the latest: no release upgrades over it yet (TestInstallNativeOverEarlierProtocol covers the step to it)", first)
	}
	dsn := pgtest.DSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, err := released.Migrations(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files[:first] {
		if _, err := db.Exec(f.Up()); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
	dir := serverReadableDir(t)
	lib, err := native.Build(context.Background(), dir, snowflake.Twitter())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := native.Install(context.Background(), conn, "public", lib); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "install", "--dsn", dsn)
	if code != 0 || !strings.Contains(out, "applied "+sqlgen.MigrationName(sqlgen.Latest)) ||
		!strings.Contains(out, "snowflake_next_id() is the native generator again ("+lib+")") {
		t.Fatalf("install over release %d with the native generator = %d, %q, %q", first, code, out, errOut)
	}
	if lang := generatorLanguage(t, db); lang != "c" {
		t.Errorf("after the upgrade, snowflake_next_id() is %s; want c", lang)
	}
}

// TestInstallNativeOverEarlierProtocol: a schema at release 6 (releases
// 2 to 6 catch up under a table lock; a library built for them follows
// that protocol) gets release 7 and the native generator from one
// 'sfgen install --native --native-dir DIR', and the IDs come from the C
// function, which catches up through release 7's turn.
func TestInstallNativeOverEarlierProtocol(t *testing.T) {
	nativeHere(t)
	dsn := pgtest.DSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, err := released.Migrations(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files[:native.Releases[0]-1] {
		if _, err := db.Exec(f.Up()); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
	code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--native", "--native-dir", serverReadableDir(t))
	if code != 0 || !strings.Contains(out, "applied "+sqlgen.MigrationName(sqlgen.Latest)) ||
		!strings.Contains(out, "snowflake_next_id() is the native generator (") {
		t.Fatalf("install --native over release %d = %d, %q, %q", native.Releases[0]-1, code, out, errOut)
	}
	if lang := generatorLanguage(t, db); lang != "c" {
		t.Fatalf("after install --native, snowflake_next_id() is %s; want c", lang)
	}
	// A catch-up due: the C function's slow path catches up.
	if _, err := db.Exec("SELECT setval('public.snowflake_caught_up', trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 60000)"); err != nil {
		t.Fatal(err)
	}
	var id, guard, now int64
	if err := db.QueryRow("SELECT public.snowflake_next_id(), pg_sequence_last_value('public.snowflake_caught_up'), trunc(extract(epoch FROM clock_timestamp()) * 1000)::bigint").Scan(&id, &guard, &now); err != nil {
		t.Fatal(err)
	}
	if guard < now-1000 {
		t.Fatalf("the native generator's call with a catch-up due left the guard at %d, %d ms before the clock", guard, now-guard)
	}
}

// TestInstallRefusesNativeOfEarlierProtocol: a schema whose native
// generator is a library of another state protocol (here: a library with
// no sfgen_native_release(), as those built before release 7) is refused
// by 'sfgen install' without --native, which would install that library
// again over the latest release; nothing changes, and the message says how
// to rebuild.
func TestInstallRefusesNativeOfEarlierProtocol(t *testing.T) {
	nativeHere(t)
	dsn := pgtest.DSN(t)
	if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--native", "--native-dir", serverReadableDir(t)); code != 0 {
		t.Fatalf("install --native: %d %s", code, errOut)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Point the C function at a library of another protocol (only its
	// catalog entry is read; nothing calls it).
	if _, err := db.Exec(`CREATE OR REPLACE FUNCTION public.` + native.CFunction + ` RETURNS bigint LANGUAGE c VOLATILE AS '$libdir/plpgsql', 'plpgsql_call_handler'`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "install", "--dsn", dsn)
	if code != 1 || !strings.Contains(errOut, "built for an earlier state protocol") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("install over a native generator of another protocol = %d, %q, %q; want exit 1 saying so", code, out, errOut)
	}
}

// TestInstallNativeRefusals: --native-dir must be absolute and go with
// --native (exit 2; --native alone uses the library by its portable
// name, TestNativePortableName); a role that is not a superuser is told
// the native generator is not available to it (exit 1), and nothing is
// installed.
func TestInstallNativeRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--native", "--native-dir", "lib"}, `--native-dir "lib" is not absolute`},
		{[]string{"--native-dir", "/tmp/x"}, "--native-dir goes with --native"},
		{[]string{"--native=false", "--native-dir", "/tmp/x"}, "--native-dir goes with --native"},
	} {
		code, out, errOut := sfgen(t, append([]string{"install", "--dsn", "postgres://x@localhost/x"}, tc.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("install %v = %d, %q, %q; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	dsn := pgtest.DSN(t)
	_, roleDSN := pgtest.LoginRole(t, dsn, "nosuper", "")
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`GRANT CREATE ON DATABASE ` + pgxIdent(t, db) + ` TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sfgen(t, "install", "--dsn", roleDSN, "--schema", "ids", "--native", "--native-dir", t.TempDir())
	if code != 1 || out != "" || !strings.Contains(errOut, "creating a C function takes a superuser; nothing was changed") {
		t.Errorf("install --native as a non-superuser = %d, %q, %q", code, out, errOut)
	}
	var exists bool
	if err := db.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'ids')`).Scan(&exists); err != nil || exists {
		t.Errorf("schema ids exists after the refused install: %v %v", exists, err)
	}
}

// pgxIdent returns the current database's name, quoted.
func pgxIdent(t *testing.T, db *sql.DB) string {
	t.Helper()
	var q string
	if err := db.QueryRow(`SELECT pg_catalog.quote_ident(pg_catalog.current_database())`).Scan(&q); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestInstallNativeUnloadable: a --native-dir the server cannot read is
// found out before anything changes (exit 1, no install).
func TestInstallNativeUnloadable(t *testing.T) {
	nativeHere(t)
	dsn := pgtest.DSN(t)
	dir := t.TempDir() // under a directory only this process's user can enter
	code, out, errOut := sfgen(t, "install", "--dsn", dsn, "--schema", "ids", "--native", "--native-dir", dir)
	if code != 1 || out != "" || !strings.Contains(errOut, "the database server cannot load") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("install --native into an unreadable directory = %d, %q, %q", code, out, errOut)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'ids')`).Scan(&exists); err != nil || exists {
		t.Errorf("schema ids exists after the refused install: %v %v", exists, err)
	}
}
