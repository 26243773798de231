package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/native"
	"github.com/sfgen/sfgen/internal/pgcluster"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// restoreRows is how many rows the table of the restore tests holds.
const restoreRows = 1000

// nativeSource starts a server of its own with sfgen's native generator
// (node 7/9) in its postgres database, built under a directory of its own
// that the caller removes to play a server without the library, and
// table t of restoreRows rows whose ids come from the column default.
// It returns the server, the library's directory and the rows' ids.
func nativeSource(t *testing.T, opts ...pgcluster.Option) (*pgcluster.Cluster, string, []int64) {
	t.Helper()
	nativeHere(t)
	src := pgtest.Server(t, opts...)
	dir := serverReadableDir(t)
	code, out, errOut := sfgen(t, "install", "--dsn", src.DSN(), "--datacenter", "7", "--machine", "9", "--native", "--native-dir", dir)
	if code != 0 || !strings.Contains(out, "snowflake_next_id() is the native generator") {
		t.Fatalf("install --native = %d, %q, %q", code, out, errOut)
	}
	db := testDB(t, src.DSN())
	mustExecDB(t, db, "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next_id(), c int)")
	mustExecDB(t, db, fmt.Sprintf("INSERT INTO t (c) SELECT g FROM generate_series(1, %d) AS g", restoreRows))
	return src, dir, tableIDs(t, db)
}

func mustExecDB(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// tableIDs returns the ids of table t, in order of c.
func tableIDs(t *testing.T, db *sql.DB) []int64 {
	t.Helper()
	var list string
	if err := db.QueryRow("SELECT COALESCE(string_agg(id::text, ',' ORDER BY c), '') FROM t").Scan(&list); err != nil {
		t.Fatalf("read table t: %v", err)
	}
	var ids []int64
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' }) {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// sameIDs fails t unless got are the ids want, in order.
func sameIDs(t *testing.T, what string, got, want []int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: table t has %d rows; want the %d of the source", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d has id %d; want %d", what, i+1, got[i], want[i])
		}
	}
}

// run runs a client program of bin and returns its combined output.
func runTool(t *testing.T, bin, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// nativeInsert inserts one row into t and checks that its id came from
// the C function (pg_stat_xact_user_functions counts its call, with
// track_functions = all), carries node 7/9 and is above every id before.
func nativeInsert(t *testing.T, dsn string, after []int64) {
	t.Helper()
	db := testDB(t, dsn)
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("SET LOCAL track_functions = 'all'"); err != nil {
		t.Fatal(err)
	}
	var id, calls int64
	if err := tx.QueryRow("INSERT INTO t (c) VALUES (0) RETURNING id").Scan(&id); err != nil {
		t.Fatalf("insert after the fix: %v", err)
	}
	if err := tx.QueryRow(`SELECT COALESCE((SELECT calls FROM pg_stat_xact_user_functions
		WHERE funcid = 'public.snowflake_next_id_c(integer)'::regprocedure), 0)`).Scan(&calls); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("the insert called the C function %d times; want 1", calls)
	}
	p, err := snowflake.Decompose(snowflake.ID(id))
	if err != nil || p.Datacenter != 7 || p.Machine != 9 {
		t.Errorf("new id %d = %+v, %v; want node 7/9", id, p, err)
	}
	for _, old := range after {
		if id <= old {
			t.Fatalf("new id %d is not above id %d of the source", id, old)
		}
	}
}

// TestNativeDumpRestoresWithoutTheLibrary: a dump of a database with the
// native generator, restored on a second server without the library (a
// plain dump with psql, a custom-format one with pg_restore), has table t
// with every row; the only errors of the restore are the C function's; an
// insert there fails with SF303, naming the commands that fix it; and
// sfgen install --native --native-dir OTHER makes the generator native
// again, from the restored state and node.
func TestNativeDumpRestoresWithoutTheLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("a second server, two dumps and restores: long; run without -short")
	}
	for _, tc := range []struct {
		name    string
		format  string // pg_dump's --format
		restore func(t *testing.T, bin, dump, dsn string) string
	}{
		{"psql", "plain", func(t *testing.T, bin, dump, dsn string) string {
			return runTool(t, bin, "psql", "-X", "-q", "-d", dsn, "-f", dump)
		}},
		{"pg_restore", "custom", func(t *testing.T, bin, dump, dsn string) string {
			// pg_restore exits 1 when it reports errors it went past.
			out, err := exec.Command(filepath.Join(bin, "pg_restore"), "-d", dsn, dump).CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
				t.Fatalf("pg_restore: %v\n%s", err, out)
			}
			return string(out)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, libDir, ids := nativeSource(t)
			dump := filepath.Join(t.TempDir(), "dump")
			runTool(t, src.BinDir(), "pg_dump", "--format", tc.format, "-f", dump, "-d", src.DSN())
			// The second server's machine has no library: it is gone.
			if err := os.RemoveAll(libDir); err != nil {
				t.Fatal(err)
			}
			dst := pgtest.Server(t)
			out := tc.restore(t, dst.BinDir(), dump, dst.DSN())
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, "ERROR") && !strings.Contains(line, libDir) && !strings.Contains(line, native.CFunction) {
					t.Errorf("restore error not about the C function: %s", line)
				}
			}
			if !strings.Contains(out, libDir) {
				t.Errorf("the restore did not report the missing library %s:\n%s", libDir, out)
			}
			db := testDB(t, dst.DSN())
			sameIDs(t, "restored", tableIDs(t, db), ids)

			_, err := db.Exec("INSERT INTO t (c) VALUES (0)")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "SF303" ||
				!strings.Contains(pe.Message, "its C function "+`"public".`+native.CFunction+" is not in this database") ||
				!strings.Contains(pe.Hint, "sfgen install --schema public --native --native-dir DIR") ||
				!strings.Contains(pe.Hint, "sfgen install --schema public --native=false") {
				t.Fatalf("insert without the library: %v (hint %q); want SF303 naming the fixes", err, hint(err))
			}
			for _, cmd := range []string{"verify", "node"} {
				if code, out, errOut := sfgen(t, cmd, "--dsn", dst.DSN()); code != 1 || !strings.Contains(errOut, "its C function public."+native.CFunction+" is missing") ||
					!strings.Contains(errOut, "sfgen install --schema public --native --native-dir DIR") {
					t.Errorf("sfgen %s on the restored database = %d, %q, %q; want the missing C function and the fix", cmd, code, out, errOut)
				}
			}
			// Nothing keeps it broken: install without --native says so.
			if code, out, errOut := sfgen(t, "install", "--dsn", dst.DSN()); code != 1 || !strings.Contains(errOut, "its C function public."+native.CFunction+" is missing") {
				t.Errorf("install without --native on the restored database = %d, %q, %q", code, out, errOut)
			}
			other := serverReadableDir(t)
			code, out, errOut := sfgen(t, "install", "--dsn", dst.DSN(), "--native", "--native-dir", other)
			if code != 0 || !strings.Contains(out, "snowflake_next_id() is the native generator ("+other+"/sfgen-") {
				t.Fatalf("install --native --native-dir OTHER = %d, %q, %q", code, out, errOut)
			}
			sameIDs(t, "after install --native", tableIDs(t, db)[:restoreRows], ids)
			nativeInsert(t, dst.DSN(), ids)
		})
	}
}

func hint(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Hint
	}
	return ""
}

// TestNativeOldShapeMovedByInstall: a database whose native generator is
// the C snowflake_next_id() itself, as sfgen installed it before the
// wrapper (releases 2 to 4), gets the wrapper from the next sfgen install
// (same library); a dump of it then restores without the library.
func TestNativeOldShapeMovedByInstall(t *testing.T) {
	src, libDir, ids := nativeSource(t)
	db := testDB(t, src.DSN())
	lib := mustLibrary(t, db)
	if !strings.HasPrefix(lib, libDir+"/") {
		t.Fatalf("library %s not under %s", lib, libDir)
	}
	// The old shape, as the old Install wrote it.
	mustExecDB(t, db, "CREATE OR REPLACE FUNCTION public.snowflake_next_id() RETURNS bigint LANGUAGE c VOLATILE PARALLEL UNSAFE AS '"+lib+"', 'sfgen_next_id'")
	mustExecDB(t, db, "DROP FUNCTION public.snowflake_next_id_c(integer), public.snowflake_next_id_c(bigint)")
	if lang := generatorLanguage(t, db); lang != "c" {
		t.Fatalf("the old shape: %s", lang)
	}
	code, out, errOut := sfgen(t, "install", "--dsn", src.DSN())
	if code != 0 || !strings.Contains(out, "snowflake_next_id() is the native generator again ("+lib+")") {
		t.Fatalf("install over the old shape = %d, %q, %q", code, out, errOut)
	}
	pc, err := pgx.Connect(context.Background(), src.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(context.Background())
	if g, err := native.InstalledGenerator(context.Background(), pc, "public"); err != nil || g.Shape != native.ShapeWrapped || g.Library != lib {
		t.Fatalf("after install: %+v, %v; want the wrapper over %s", g, err, lib)
	}
	dump := filepath.Join(t.TempDir(), "dump")
	runTool(t, src.BinDir(), "pg_dump", "--format", "custom", "-f", dump, "-d", src.DSN())
	if err := os.RemoveAll(libDir); err != nil {
		t.Fatal(err)
	}
	dst := pgtest.Server(t)
	exec.Command(filepath.Join(dst.BinDir(), "pg_restore"), "-d", dst.DSN(), dump).Run()
	sameIDs(t, "restored", tableIDs(t, testDB(t, dst.DSN())), ids)
}

// mustLibrary is the library of public.snowflake_next_id_c(integer).
func mustLibrary(t *testing.T, db *sql.DB) string {
	t.Helper()
	var lib string
	if err := db.QueryRow("SELECT probin FROM pg_proc WHERE oid = 'public.snowflake_next_id_c(integer)'::regprocedure").Scan(&lib); err != nil {
		t.Fatal(err)
	}
	return lib
}

// TestNativeStandbyPromotedWithoutTheLibrary: a standby made with
// pg_basebackup of a server with the native generator, promoted on a
// machine without the library, has every row; an insert there fails,
// naming the library; sfgen verify and sfgen node say what fixes it; and
// the documented fix (sfgen install --native --native-dir OTHER) works.
func TestNativeStandbyPromotedWithoutTheLibrary(t *testing.T) {
	if testing.Short() {
		t.Skip("a standby of its own (pg_basebackup), promoted: long; run without -short")
	}
	src, libDir, ids := nativeSource(t)
	sb := startStandby(t, src)
	db := testDB(t, sb)
	// Caught up: its rows are the primary's.
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err == nil && n == restoreRows {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the standby did not catch up in a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := os.RemoveAll(libDir); err != nil {
		t.Fatal(err)
	}
	mustExecDB(t, db, "SELECT pg_promote(true, 60)")
	sameIDs(t, "promoted", tableIDs(t, db), ids)
	_, err := db.Exec("INSERT INTO t (c) VALUES (0)")
	if err == nil || !strings.Contains(err.Error(), libDir) {
		t.Fatalf("insert on the promoted standby without the library: %v; want the server's error naming it", err)
	}
	lib := filepath.Join(libDir, "sfgen-")
	for _, cmd := range [][]string{{"verify", "--dsn", sb}, {"node", "--dsn", sb}} {
		code, out, errOut := sfgen(t, cmd...)
		if code == 0 || !strings.Contains(out+errOut, "cannot load the native generator's library "+lib) ||
			!strings.Contains(out+errOut, "sfgen install --schema public --native --native-dir DIR") {
			t.Errorf("sfgen %s on the promoted standby = %d, %q, %q; want the library it cannot load and the fix", cmd[0], code, out, errOut)
		}
	}
	other := serverReadableDir(t)
	code, out, errOut := sfgen(t, "install", "--dsn", sb, "--native", "--native-dir", other)
	if code != 0 || !strings.Contains(out, "snowflake_next_id() is the native generator ("+other+"/sfgen-") {
		t.Fatalf("install --native --native-dir OTHER on the promoted standby = %d, %q, %q", code, out, errOut)
	}
	sameIDs(t, "after the fix", tableIDs(t, db)[:restoreRows], ids)
	nativeInsert(t, sb, ids)
	if code, out, errOut := sfgen(t, "node", "--dsn", sb); code != 0 {
		t.Errorf("sfgen node after the fix = %d, %q, %q", code, out, errOut)
	}
}

// startStandby makes a standby of src with pg_basebackup -R in a
// directory of its own and runs postgres on it (as the OS user postgres
// when this is root, as pgcluster runs its servers) until the test ends;
// it returns the standby's DSN.
func startStandby(t *testing.T, src *pgcluster.Cluster) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "sfgen-standby-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("root, and no OS user postgres to run a standby as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(filepath.Join(src.BinDir(), "pg_basebackup"), "-d", src.DSN(), "-D", data, "-R", "-X", "stream", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	logPath := filepath.Join(dir, "postgres.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	pg := exec.Command(filepath.Join(src.BinDir(), "postgres"), "-D", data, "-c", "listen_addresses=", "-c", "unix_socket_directories="+dir,
		"-c", "port=5432", "-c", "fsync=off", "-c", "logging_collector=off")
	pg.Stdout, pg.Stderr = log, log
	pg.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pg.Process.Signal(syscall.SIGINT)
		pg.Wait()
	})
	dsn := fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=5432&sslmode=disable", dir)
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := pgconn.Connect(context.Background(), dsn)
		if err == nil {
			c.Close(context.Background())
			return dsn
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the standby does not answer: %v\n%s", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNativePortableName: on servers whose dynamic_library_path names a
// directory where 'sfgen build-native --native-dir' put the library
// (as $libdir is where plain 'sfgen build-native' puts it), the C
// function names the library by its portable name; a dump then restores
// on another such server with no error at all, and inserts there make
// native IDs at once. 'sfgen install --native' without --native-dir uses
// that library, and where the server finds none it says so and changes
// nothing.
func TestNativePortableName(t *testing.T) {
	if testing.Short() {
		t.Skip("two servers of their own, a dump and a restore: long; run without -short")
	}
	nativeHere(t)
	srcDir, dstDir := serverReadableDir(t), serverReadableDir(t)
	src, _, ids := nativeSource(t, pgcluster.WithSetting("dynamic_library_path", "$libdir:"+srcDir))
	portable := native.PortableName(snowflake.Twitter())
	// nativeSource built under a directory not in the path: the C
	// function names that file. Under srcDir, in the path: the portable
	// name.
	code, out, errOut := sfgen(t, "install", "--dsn", src.DSN(), "--native", "--native-dir", srcDir)
	if code != 0 || !strings.Contains(out, "snowflake_next_id() is the native generator ("+portable+")") {
		t.Fatalf("install --native --native-dir DIR in dynamic_library_path = %d, %q, %q", code, out, errOut)
	}
	if lib := mustLibrary(t, testDB(t, src.DSN())); lib != portable {
		t.Fatalf("the C function's library is %q; want %q", lib, portable)
	}
	dump := filepath.Join(t.TempDir(), "dump")
	runTool(t, src.BinDir(), "pg_dump", "--format", "plain", "-f", dump, "-d", src.DSN())

	dst := pgtest.Server(t, pgcluster.WithSetting("dynamic_library_path", "$libdir:"+dstDir))
	// No library there yet: install --native says where it looked.
	dstDB := testDB(t, dst.DSN())
	if code, out, errOut := sfgen(t, "install", "--dsn", dst.DSN(), "--native"); code != 1 ||
		!strings.Contains(errOut, "the database server finds no "+portable+" along its dynamic_library_path") {
		t.Errorf("install --native where the server has no library = %d, %q, %q", code, out, errOut)
	}
	var n int
	if err := dstDB.QueryRow("SELECT count(*) FROM pg_proc WHERE proname LIKE 'snowflake%'").Scan(&n); err != nil || n != 0 {
		t.Errorf("after the refused install: %d sfgen functions (%v); want none", n, err)
	}
	if code, out, errOut := sfgen(t, "build-native", "--native-dir", dstDir); code != 0 {
		t.Fatalf("build-native on the second server = %d, %q, %q", code, out, errOut)
	}
	out = runTool(t, dst.BinDir(), "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dst.DSN(), "-f", dump)
	if strings.Contains(out, "ERROR") {
		t.Errorf("the restore reported errors:\n%s", out)
	}
	sameIDs(t, "restored", tableIDs(t, dstDB), ids)
	nativeInsert(t, dst.DSN(), ids)
	if code, out, errOut := sfgen(t, "node", "--dsn", dst.DSN()); code != 0 {
		t.Errorf("sfgen node on the restored database = %d, %q, %q", code, out, errOut)
	}

	// And install --native alone, on a fresh database of that server.
	mustExecDB(t, dstDB, "CREATE DATABASE fresh")
	fresh := strings.Replace(dst.DSN(), "/postgres?", "/fresh?", 1)
	if code, out, errOut := sfgen(t, "install", "--dsn", fresh, "--native", "--datacenter", "7", "--machine", "9"); code != 0 ||
		!strings.Contains(out, "snowflake_next_id() is the native generator ("+portable+")") {
		t.Fatalf("install --native with the library in dynamic_library_path = %d, %q, %q", code, out, errOut)
	}
	if lib := mustLibrary(t, testDB(t, fresh)); lib != portable {
		t.Errorf("the C function's library is %q; want %q", lib, portable)
	}
}

// TestNativeOldShapeAcrossUpgrade: a schema at release 2 or 3 whose
// snowflake_next_id() is the C function itself (as sfgen installed the
// native generator before the wrapper) is upgraded by sfgen install and
// ends with the wrapper over the same library, the old C function gone.
func TestNativeOldShapeAcrossUpgrade(t *testing.T) {
	nativeHere(t)
	lib, err := native.Build(context.Background(), serverReadableDir(t), snowflake.Twitter())
	if err != nil {
		t.Fatal(err)
	}
	files, err := released.Migrations(sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 1, Machine: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, release := range []int{2, 3} {
		t.Run(fmt.Sprintf("release %d", release), func(t *testing.T) {
			dsn := pgtest.DSN(t)
			db := testDB(t, dsn)
			for _, f := range files[:release] {
				mustExecDB(t, db, f.Up())
			}
			mustExecDB(t, db, "CREATE OR REPLACE FUNCTION public.snowflake_next_id() RETURNS bigint LANGUAGE c VOLATILE PARALLEL UNSAFE AS '"+lib+"', 'sfgen_next_id'")
			code, out, errOut := sfgen(t, "install", "--dsn", dsn)
			if code != 0 || !strings.Contains(out, fmt.Sprintf("schema public is at sfgen release %d", sqlgen.Latest)) ||
				!strings.Contains(out, "snowflake_next_id() is the native generator again ("+lib+")") {
				t.Fatalf("install over release %d with the old shape = %d, %q, %q", release, code, out, errOut)
			}
			if lang := generatorLanguage(t, db); lang != "c" || mustLibrary(t, db) != lib {
				t.Fatalf("after the upgrade: %s, %s; want the wrapper over %s", lang, mustLibrary(t, db), lib)
			}
		})
	}
}
