package install

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var (
	schemaSeq atomic.Int64
	dsns      sync.Map // *sql.DB from database -> its DSN
)

// dsnOf returns the DSN database opened db with.
func dsnOf(t *testing.T, db *sql.DB) string {
	t.Helper()
	dsn, ok := dsns.Load(db)
	if !ok {
		t.Fatal("dsnOf: db did not come from database")
	}
	return dsn.(string)
}

// database opens a database of the test's own and names a schema in it
// for the test to install into.
func database(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	dsns.Store(db, dsn)
	schema := fmt.Sprintf("sfgen_install_%d_%d", os.Getpid(), schemaSeq.Add(1))
	t.Cleanup(func() {
		db.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE")
		db.Close()
	})
	return db, schema
}

func TestApplyTwice(t *testing.T) {
	db, schema := database(t)
	ctx := context.Background()
	res, err := Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	// The latest release's install, alone.
	want := []string{sqlgen.MigrationName(sqlgen.Latest)}
	if fmt.Sprint(res.Applied) != fmt.Sprint(want) || res.Version != sqlgen.Latest || res.Schema != schema {
		t.Fatalf("first Apply = %+v; want %v applied, version %d", res, want, sqlgen.Latest)
	}
	res, err = Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 0 || res.Version != sqlgen.Latest {
		t.Fatalf("second Apply = %+v; want nothing applied", res)
	}
	var id int64
	if err := db.QueryRow("SELECT " + schema + ".snowflake_compose(1288834975657, 1, 1, 0)").Scan(&id); err != nil || id != 4194439168 {
		t.Fatalf("worked example in the database = %d, %v", id, err)
	}
	// The version table is sfgen's own, beside any goose_db_version.
	var versions string
	if err := db.QueryRow("SELECT string_agg(version_id::text, ',' ORDER BY version_id) FROM " + schema + "." + VersionTable + " WHERE version_id > 0 AND is_applied").Scan(&versions); err != nil || versions != fmt.Sprint(sqlgen.Latest) {
		t.Errorf("%s.%s records versions %q, %v; want %d", schema, VersionTable, versions, err, sqlgen.Latest)
	}
}

// failDDLIn makes every CREATE in schema fail from now on, with an event
// trigger (so only in this test's database, and only for that schema):
// an install then fails midway through its migration, past the checks.
func failDDLIn(t *testing.T, db *sql.DB, schema string) {
	t.Helper()
	name := "sfgen_test_fail_" + schema
	if _, err := db.Exec(`CREATE FUNCTION public.` + name + `() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_event_trigger_ddl_commands() c WHERE c.schema_name = '` + schema + `' AND c.object_identity LIKE '%.snowflake_state') THEN
		RAISE EXCEPTION 'test: no sequences in ` + schema + `';
	END IF;
END $$;
CREATE EVENT TRIGGER ` + name + ` ON ddl_command_end EXECUTE FUNCTION public.` + name + `()`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Exec("DROP EVENT TRIGGER IF EXISTS " + name)
		db.Exec("DROP FUNCTION IF EXISTS public." + name + "()")
	})
}

// objects lists the relations and functions in schema.
func objects(t *testing.T, db *sql.DB, schema string) []string {
	t.Helper()
	var out []string
	rows, err := db.Query(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
		UNION ALL SELECT p.proname || '()' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

// TestFailedFirstInstall makes the first migration fail midway, into a
// schema that exists (holding something of the user's) and into one that
// Apply creates, with a node and without (UnsetNode), and checks that the
// database is as it was.
func TestFailedFirstInstall(t *testing.T) {
	for _, c := range []struct{ existing, unsetNode bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		existing := c.existing
		t.Run(fmt.Sprintf("schema_existed=%v/unset_node=%v", existing, c.unsetNode), func(t *testing.T) {
			db, schema := database(t)
			var before []string
			if existing {
				if _, err := db.Exec("CREATE SCHEMA " + schema + "; CREATE TABLE " + schema + ".users(id bigint)"); err != nil {
					t.Fatal(err)
				}
				before = objects(t, db, schema)
			}
			failDDLIn(t, db, schema)
			_, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, UnsetNode: c.unsetNode})
			if err == nil || !strings.Contains(err.Error(), "test: no sequences") {
				t.Fatalf("Apply = %v; want the migration's failure", err)
			}
			if !strings.Contains(err.Error(), sqlgen.MigrationName(sqlgen.Latest)) {
				t.Errorf("error %q does not name the migration", err)
			}
			var exists bool
			db.QueryRow("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists)
			if exists != existing {
				t.Errorf("after the failed install, schema exists = %v; want %v", exists, existing)
			}
			if got := objects(t, db, schema); fmt.Sprint(got) != fmt.Sprint(before) {
				t.Errorf("after a failed install the schema holds %v; want only what was there: %v", got, before)
			}
		})
	}
}

// TestFSIsTheLatestInstall: the FS `sfgen install` applies holds one
// file, the latest release's install migration, versioned as that
// release; and it is an fs.FS as testing/fstest checks one.
func TestFSIsTheLatestInstall(t *testing.T) {
	o := sqlgen.Options{Layout: snowflake.Twitter(), Schema: "ids", Datacenter: 1, Machine: 2}
	fsys, err := FS(o)
	if err != nil {
		t.Fatal(err)
	}
	name := sqlgen.MigrationName(sqlgen.Latest)
	if got, err := fs.Glob(fsys, "*"); err != nil || !slices.Equal(got, []string{name}) {
		t.Fatalf("FS holds %v (%v); want %s alone", got, err, name)
	}
	want, err := sqlgen.Migration(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, fsys, name); !bytes.Equal(got, want) {
		t.Errorf("FS's %s is not sqlgen.Migration's install", name)
	}
	if err := fstest.TestFS(fsys, name); err != nil {
		t.Error(err)
	}
}

// releasedFS is sfgen's release line as it shipped, releases 1 to
// released.Last rendered for o, as goose reads it: how databases reached
// an older release.
func releasedFS(t testing.TB, o sqlgen.Options) fs.FS {
	t.Helper()
	files, err := released.Migrations(o)
	if err != nil {
		t.Fatal(err)
	}
	return releaseFS(files)
}

func mustRead(t *testing.T, fsys fs.FS, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGooseUpDownUp runs the migration's Up, Down and Up with goose's
// provider in an application's own version table. (cmd/sfgen tests do the
// same with the goose command.)
func TestGooseUpDownUp(t *testing.T) {
	db, schema := database(t)
	ctx := context.Background()
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	fsys, err := FS(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	table := schema + ".app_goose_db_version"
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithTableName(table), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	functions := func() int {
		var n int
		db.QueryRow(`SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname LIKE 'snowflake\_%'`, schema).Scan(&n)
		return n
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	up := functions()
	if up < 6 {
		t.Fatalf("after Up, the schema has %d snowflake_ functions", up)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if n := functions(); n != 0 {
		t.Errorf("after Down, the schema still has %d snowflake_ functions", n)
	}
	var seqs int
	db.QueryRow(`SELECT count(*) FROM pg_class WHERE relname LIKE 'snowflake\_%' AND relnamespace = $1::regnamespace`, schema).Scan(&seqs)
	if seqs != 0 {
		t.Errorf("after Down, the schema still has %d snowflake_ relations", seqs)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if n := functions(); n != up {
		t.Errorf("after Up again, %d functions; want %d", n, up)
	}
}

// TestScriptRunsTwice runs the plain script twice, as psql -f would.
func TestScriptRunsTwice(t *testing.T) {
	db, schema := database(t)
	script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := db.Exec(string(script)); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
}

// TestSQLErrorsMatchGo checks that the database rejects out-of-range input
// with SQLSTATE 22003 and the Go composer's message, word for word.
func TestSQLErrorsMatchGo(t *testing.T) {
	db, schema := database(t)
	if _, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); err != nil {
		t.Fatal(err)
	}
	for _, in := range [][4]int64{
		{1288834974656, 0, 0, 0},
		{3487858230209, 0, 0, 0},
		{1288834974657, 32, 0, 0},
		{1288834974657, -1, 0, 0},
		{1288834974657, 0, 32, 0},
		{1288834974657, 0, 0, 4096},
		{1288834974657, 0, 0, -2147483648},
	} {
		_, goErr := snowflake.Compose(in[0], in[1], in[2], in[3])
		var re *snowflake.RangeError
		if !errors.As(goErr, &re) {
			t.Fatalf("Go accepted %v", in)
		}
		var id int64
		err := db.QueryRow("SELECT "+schema+".snowflake_compose($1, $2, $3, $4)", in[0], in[1], in[2], in[3]).Scan(&id)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "22003" || pgErr.Message != goErr.Error() {
			t.Errorf("snowflake_compose%v: %v; want SQLSTATE 22003 %q", in, err, goErr)
			continue
		}
		if !strings.Contains(pgErr.Message, re.Field.String()) || !strings.Contains(pgErr.Message, fmt.Sprint(re.Value)) {
			t.Errorf("message %q does not name field %s and value %d", pgErr.Message, re.Field, re.Value)
		}
	}
	for _, f := range []string{"snowflake_decompose", "snowflake_timestamp"} {
		_, err := db.Exec("SELECT " + schema + "." + f + "(-5)")
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "22003" || pgErr.Message != "id -5 out of range [0, 9223372036854775807]" {
			t.Errorf("%s(-5): %v", f, err)
		}
	}
}

// TestHostileSearchPath checks that the functions still answer right when
// a session's search_path puts look-alike functions ahead of pg_catalog.
func TestHostileSearchPath(t *testing.T) {
	db, schema := database(t)
	if _, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); err != nil {
		t.Fatal(err)
	}
	evil := schema + "_evil"
	t.Cleanup(func() { db.Exec("DROP SCHEMA IF EXISTS " + evil + " CASCADE") })
	if _, err := db.Exec(`CREATE SCHEMA ` + evil + `;
CREATE FUNCTION ` + evil + `.format(text, bigint) RETURNS text LANGUAGE sql AS $$ SELECT 'hijacked' $$;
CREATE FUNCTION ` + evil + `.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT timestamptz '2000-01-01' $$;`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "SET search_path = "+evil+", pg_catalog, public"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(context.Background(), "SELECT "+schema+".snowflake_compose(1, 0, 0, 0)")
	if err == nil || strings.Contains(err.Error(), "hijacked") || !strings.Contains(err.Error(), "timestamp 1 out of range") {
		t.Errorf("with a hostile search_path, the error is %v", err)
	}
	var ts int64
	if err := conn.QueryRowContext(context.Background(), "SELECT "+schema+".snowflake_next_id() >> 22").Scan(&ts); err != nil {
		t.Fatal(err)
	}
	if ts+snowflake.TwitterEpoch < 1700000000000 {
		t.Errorf("snowflake_next_id() used the hijacked clock: timestamp %d", ts+snowflake.TwitterEpoch)
	}
}

// otherRole creates a role of the test's own, which may CREATE in schema
// (created if missing), and drops it and what it owns afterwards.
func otherRole(t *testing.T, db *sql.DB, schema string) string {
	t.Helper()
	role := pgtest.Role(t, dsnOf(t, db), "mallory", "")
	if _, err := db.Exec("CREATE SCHEMA IF NOT EXISTS " + schema + "; GRANT CREATE, USAGE ON SCHEMA " + schema + " TO " + role); err != nil {
		t.Fatal(err)
	}
	return role
}

// asRole runs sql as role, in one transaction.
func asRole(t *testing.T, db *sql.DB, role, sql string) {
	t.Helper()
	if _, err := db.Exec("BEGIN; SET LOCAL ROLE " + role + "; " + sql + "; COMMIT"); err != nil {
		db.Exec("ROLLBACK")
		t.Fatalf("as %s: %v", role, err)
	}
}

// atRelease installs release r of the release line into schema with goose
// in sfgen's version table, as an sfgen of release r left it.
func atRelease(t *testing.T, db *sql.DB, schema string, r int) {
	t.Helper()
	fsys := releasedFS(t, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
	if _, err := db.Exec("CREATE SCHEMA IF NOT EXISTS " + schema); err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithTableName(schema+"."+VersionTable), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), int64(r)); err != nil {
		t.Fatalf("goose UpTo(%d) on schema %s: %v", r, schema, err)
	}
}

// A squat is an object another role makes under a name of the latest
// release's, before sfgen makes it: what the preflight must find.
type squat struct {
	name    string
	sql     string // run as the other role; {schema} replaced
	message string // how the refusal names it; {schema} and {role} replaced
}

// latestSquats are the names release 3 added: the lease table, its
// primary key's index and the row type the table brings, and the lease
// functions with the signatures release 3 gives them.
var latestSquats = []squat{
	{"the lease table", "CREATE TABLE {schema}.snowflake_lease (datacenter_id integer, machine_id integer)",
		"table {schema}.snowflake_lease owned by {role}"},
	{"the lease table's primary key", "CREATE TABLE {schema}.m (a integer); CREATE UNIQUE INDEX snowflake_lease_pkey ON {schema}.m (a)",
		"index {schema}.snowflake_lease_pkey owned by {role}"},
	{"a type named as the lease table", "CREATE TYPE {schema}.snowflake_lease AS ENUM ('x')",
		"type {schema}.snowflake_lease owned by {role}"},
	{"snowflake_lease_take", "CREATE FUNCTION {schema}.snowflake_lease_take(holder text, ttl_ms bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'",
		"function {schema}.snowflake_lease_take(text,bigint) owned by {role}"},
	{"snowflake_lease_renew", "CREATE FUNCTION {schema}.snowflake_lease_renew(integer, integer, bigint, bigint) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'",
		"function {schema}.snowflake_lease_renew(integer,integer,bigint,bigint) owned by {role}"},
	{"snowflake_lease_release", "CREATE FUNCTION {schema}.snowflake_lease_release(integer, integer, bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true'",
		"function {schema}.snowflake_lease_release(integer,integer,bigint,bigint) owned by {role}"},
	{"snowflake_lease_reserve", "CREATE FUNCTION {schema}.snowflake_lease_reserve(integer, integer, text) RETURNS void LANGUAGE sql AS ''",
		"function {schema}.snowflake_lease_reserve(integer,integer,text) owned by {role}"},
	{"snowflake_lease_unreserve", "CREATE FUNCTION {schema}.snowflake_lease_unreserve(integer, integer) RETURNS boolean LANGUAGE sql AS 'SELECT true'",
		"function {schema}.snowflake_lease_unreserve(integer,integer) owned by {role}"},
	{"an overload of snowflake_lease_take", "CREATE FUNCTION {schema}.snowflake_lease_take(text) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'",
		"function {schema}.snowflake_lease_take(text) owned by {role}"},
	{"snowflake_next_id_local", "CREATE FUNCTION {schema}.snowflake_next_id_local() RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'",
		"function {schema}.snowflake_next_id_local() owned by {role}"},
	// As Citus copies it to a node, body and all: another role's still.
	{"a copy of snowflake_next_id_local", "SET check_function_bodies = off; CREATE FUNCTION {schema}.snowflake_next_id_local() RETURNS bigint LANGUAGE sql AS 'SELECT \"{schema}\".snowflake_next_id()'",
		"function {schema}.snowflake_next_id_local() owned by {role}"},
}

// TestApplyOverCitusCopyOfLocalID: a schema that holds only
// snowflake_next_id_local() as Citus copies it to a node that lacks
// sfgen (the installing role's, sfgen's body to the letter, no comment)
// gets sfgen installed over it; the same function with another body, or
// SECURITY DEFINER, is the role's own and refused, changing nothing.
func TestApplyOverCitusCopyOfLocalID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, dsn := upgradeDB(t)
	for _, c := range []struct {
		name, body, attrs string
		adopted           bool
	}{
		{"copy", `SELECT "{schema}".snowflake_next_id()`, "", true}, // sfgen quotes the schema
		{"other body", "SELECT {schema}.snowflake_next_id()", "", false},
		{"security definer", `SELECT "{schema}".snowflake_next_id()`, "SECURITY DEFINER", false},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			f := newFixture(t, db, dsn)
			f.createSchema()
			body := strings.ReplaceAll(c.body, "{schema}", f.schema)
			f.exec("SET check_function_bodies = off; CREATE FUNCTION " + f.schema + ".snowflake_next_id_local() RETURNS bigint LANGUAGE sql " + c.attrs + " AS '" + body + "'; RESET check_function_bodies")
			_, err := Apply(ctx, db, f.o)
			if !c.adopted {
				if !errors.Is(err, ErrForeignObject) || !strings.Contains(err.Error(), "function "+f.schema+".snowflake_next_id_local() owned by") {
					t.Fatalf("Apply over snowflake_next_id_local() with %s = %v; want ErrForeignObject naming it", c.name, err)
				}
				if n := f.queryInt("SELECT count(*) FROM pg_proc WHERE pronamespace = $1::regnamespace", f.schema); n != 1 {
					t.Errorf("the refused Apply left %d functions in the schema; want the one there before", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply over Citus' copy of snowflake_next_id_local(): %v", err)
			}
			f.setNode(testDatacenter, testMachine)
			if id := f.queryInt("SELECT " + f.schema + ".snowflake_next_id_local()"); id <= 0 {
				t.Errorf("snowflake_next_id_local() = %d after the install", id)
			}
			if n := f.queryInt("SELECT count(*) FROM pg_proc WHERE oid = $1::regprocedure AND obj_description(oid, 'pg_proc') LIKE '%Generated by sfgen release %'", f.schema+".snowflake_next_id_local()"); n != 1 {
				t.Errorf("after the install, snowflake_next_id_local() has no comment of sfgen's")
			}
		})
	}
}

// TestApplyRefuses sets up each kind of schema Apply must refuse and
// checks that it says what it found, with the sentinel, and changes
// nothing; and that the plain script refuses it too, with the SQLSTATE.
func TestApplyRefuses(t *testing.T) {
	type refusal struct {
		name    string
		setup   func(t *testing.T, db *sql.DB, schema string) (role string)
		want    error
		message string // {schema} and {role} replaced
		state   string // the SQLSTATE the plain script refuses with; "": the script does not look
	}
	var squats []refusal
	for _, sq := range latestSquats {
		// Into a schema without sfgen, and over an install of release 2
		// (whose own checks knew nothing of the lease names).
		for _, from := range []int{0, 2} { // release 2 is the last before leases
			squats = append(squats, refusal{fmt.Sprintf("another role's %s at release %d", sq.name, from), func(t *testing.T, db *sql.DB, schema string) string {
				if from > 0 {
					atRelease(t, db, schema, from)
				}
				role := otherRole(t, db, schema)
				asRole(t, db, role, strings.ReplaceAll(sq.sql, "{schema}", schema))
				return role
			}, ErrForeignObject, sq.message, "SF101"})
		}
	}
	for _, tc := range append([]refusal{
		{"another role's state sequence", func(t *testing.T, db *sql.DB, schema string) string {
			role := otherRole(t, db, schema)
			asRole(t, db, role, "CREATE SEQUENCE "+schema+".snowflake_state")
			return role
		}, ErrForeignObject, "sequence {schema}.snowflake_state owned by {role}", "SF101"},
		{"another role's snowflake_next_id()", func(t *testing.T, db *sql.DB, schema string) string {
			role := otherRole(t, db, schema)
			asRole(t, db, role, "CREATE FUNCTION "+schema+".snowflake_next_id() RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'")
			return role
		}, ErrForeignObject, "function {schema}.snowflake_next_id() owned by {role}", "SF101"},
		{"an overload added to an install", func(t *testing.T, db *sql.DB, schema string) string {
			if _, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); err != nil {
				t.Fatal(err)
			}
			db.Exec("DELETE FROM "+schema+"."+VersionTable+" WHERE version_id = $1", sqlgen.Latest) // so that there is something to apply
			role := otherRole(t, db, schema)
			asRole(t, db, role, "CREATE FUNCTION "+schema+".snowflake_node_bits(x integer DEFAULT 0) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'")
			return role
		}, ErrForeignObject, "function {schema}.snowflake_node_bits(integer) owned by {role}", "SF101"},
		{"the installer's own objects, not sfgen's", func(t *testing.T, db *sql.DB, schema string) string {
			db.Exec("CREATE SCHEMA " + schema + "; CREATE TABLE " + schema + ".snowflake_state (id int)")
			return ""
		}, ErrForeignObject, "table {schema}.snowflake_state owned by", "SF101"},
		{"another role's version table", func(t *testing.T, db *sql.DB, schema string) string {
			role := otherRole(t, db, schema)
			asRole(t, db, role, "CREATE TABLE "+schema+"."+VersionTable+" (id serial, version_id bigint, is_applied boolean, tstamp timestamp)")
			return role
		}, ErrForeignObject, "table {schema}.sfgen_db_version owned by {role}", ""},
		{"a schema another role can create in", func(t *testing.T, db *sql.DB, schema string) string {
			return otherRole(t, db, schema)
		}, ErrUntrustedSchema, "role {role} can create objects in it, such as overloads of sfgen's functions; sfgen runs its functions only in a schema where no role but their owner (and superusers) can create objects: REVOKE CREATE ON SCHEMA \"{schema}\" FROM {role}", ""},
		{"a schema every role can create in", func(t *testing.T, db *sql.DB, schema string) string {
			db.Exec("CREATE SCHEMA " + schema + "; GRANT CREATE ON SCHEMA " + schema + " TO PUBLIC")
			return ""
		}, ErrUntrustedSchema, "every role (PUBLIC) can create objects in it", ""},
		{"another role's trigger on the version table", func(t *testing.T, db *sql.DB, schema string) string {
			if _, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); err != nil {
				t.Fatal(err)
			}
			db.Exec("DELETE FROM "+schema+"."+VersionTable+" WHERE version_id = $1", sqlgen.Latest) // so that there is something to apply
			db.Exec("CREATE FUNCTION " + schema + "_trg() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'; CREATE TRIGGER escalate BEFORE INSERT ON " + schema + "." + VersionTable + " FOR EACH ROW EXECUTE FUNCTION " + schema + "_trg()")
			return ""
		}, ErrForeignObject, "table {schema}.sfgen_db_version with trigger escalate, which sfgen did not make so", ""},
		{"a schema another role owns", func(t *testing.T, db *sql.DB, schema string) string {
			role := otherRole(t, db, schema)
			db.Exec("ALTER SCHEMA " + schema + " OWNER TO " + role)
			return role
		}, ErrUntrustedSchema, "schema {schema} is owned by role {role}", "SF104"},
		{"another layout", func(t *testing.T, db *sql.DB, schema string) string {
			db.Exec("CREATE SCHEMA " + schema + "; CREATE FUNCTION " + schema + ".snowflake_layout() RETURNS text LANGUAGE sql AS $$SELECT 'epoch=1 timestamp=41 datacenter=5 machine=5 sequence=12'$$")
			return ""
		}, ErrLayoutMismatch, "holds sfgen functions for layout epoch=1 timestamp=41", "SF102"},
		{"a newer release", func(t *testing.T, db *sql.DB, schema string) string {
			db.Exec("CREATE SCHEMA " + schema + "; CREATE FUNCTION " + schema + ".snowflake_layout() RETURNS text LANGUAGE sql AS $$SELECT '" + snowflake.Twitter().String() + "'$$; CREATE FUNCTION " + schema + fmt.Sprintf(".snowflake_release() RETURNS integer LANGUAGE sql AS 'SELECT %d'", sqlgen.Latest+1))
			return ""
		}, ErrNewerRelease, fmt.Sprintf("is at sfgen release %d, newer than this SQL (release %d)", sqlgen.Latest+1, sqlgen.Latest), "SF103"},
	}, squats...) {
		t.Run(tc.name, func(t *testing.T) {
			db, schema := database(t)
			role := tc.setup(t, db, schema)
			before := objects(t, db, schema)
			_, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Apply = %v; want %v", err, tc.want)
			}
			if msg := strings.NewReplacer("{schema}", schema, "{role}", role).Replace(tc.message); !strings.Contains(err.Error(), msg) || strings.Contains(err.Error(), "\n") || strings.HasPrefix(err.Error(), "sfgen: ") {
				t.Errorf("Apply = %q; want one line with %q", err, msg)
			}
			if after := objects(t, db, schema); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("a refused Apply changed the schema:\n  before %v\n  after  %v", before, after)
			}
			if tc.state == "" {
				return
			}
			script, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			_, err = db.Exec(string(script))
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != tc.state {
				t.Errorf("the plain script = %v; want SQLSTATE %s", err, tc.state)
			}
			if after := objects(t, db, schema); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("a refused plain script changed the schema:\n  before %v\n  after  %v", before, after)
			}
		})
	}
}

// TestConcurrentApply runs six first installs into one new schema at
// once, five times over: they take turns, none fails (on CREATE SCHEMA,
// say), and the first one does the work. Each round's schema gets a node
// of its own: the five share a database, where a node belongs to one
// maker (release 4's registry).
func TestConcurrentApply(t *testing.T) {
	if testing.Short() {
		t.Skip("concurrent installs: long; run without -short")
	}
	db, schema := database(t)
	db.SetMaxOpenConns(32)
	const installs = 6
	for round := range 5 {
		schema := fmt.Sprintf("%s_%d", schema, round)
		t.Cleanup(func() { db.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE") })
		var applied atomic.Int64
		errs := make(chan error, installs)
		start := make(chan struct{})
		for range installs {
			go func() {
				<-start
				res, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, Machine: int64(round)})
				if err == nil {
					applied.Add(int64(len(res.Applied)))
					if res.Version != sqlgen.Latest {
						err = fmt.Errorf("version %d", res.Version)
					}
				}
				errs <- err
			}()
		}
		close(start)
		for range installs {
			if err := <-errs; err != nil {
				t.Errorf("round %d: a concurrent Apply failed: %v", round, err)
			}
		}
		if n := applied.Load(); n != 1 {
			t.Errorf("round %d: %d migrations applied in all; want 1, once", round, n)
		}
	}
}

// waitForInstallLockTry returns once a session in db's database has tried
// for the install lock (Apply polls with pg_try_advisory_lock), and fails
// the test if none does within a minute.
func waitForInstallLockTry(t *testing.T, db *sql.DB) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var waiting bool
		if err := db.QueryRow(`SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity
			WHERE datname = pg_catalog.current_database() AND pid <> pg_catalog.pg_backend_pid() AND query LIKE '%pg_try_advisory_lock%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
	}
	t.Fatal("no session tried for the install lock within a minute")
}

// TestApplyWaitsForAnotherInstall holds the install lock from another
// session: an Apply whose context ends while it waits changes nothing,
// and one that waits longer than LockWait names the session in the way.
func TestApplyWaitsForAnotherInstall(t *testing.T) {
	db, schema := database(t)
	if _, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); err != nil {
		t.Fatal(err)
	}
	holder, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	var pid int
	if err := holder.QueryRowContext(context.Background(), "SELECT pg_advisory_lock($1), pg_backend_pid()", applyLockID).Scan(new(any), &pid); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Apply while another holds the lock, cancelled = %v; want the context's error", err)
	}
	var n int
	db.QueryRow("SELECT count(*) FROM " + schema + "." + VersionTable + " WHERE version_id > 0").Scan(&n)
	if n != 1 {
		t.Errorf("after a cancelled Apply, %s has %d rows; want 1 (nothing undone)", VersionTable, n)
	}
	// A first install into a new schema that waits while another makes
	// the schema and its version table, and is then cancelled, must not
	// undo the other's work.
	fresh := schema + "_new"
	t.Cleanup(func() { db.Exec("DROP SCHEMA IF EXISTS " + fresh + " CASCADE") })
	done := make(chan error)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go func() {
		_, err := Apply(ctx2, db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: fresh})
		done <- err
	}()
	waitForInstallLockTry(t, db)
	if _, err := holder.ExecContext(context.Background(), "CREATE SCHEMA "+fresh+"; CREATE TABLE "+fresh+"."+VersionTable+" (id int)"); err != nil {
		t.Fatal(err)
	}
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiting Apply = %v; want the context's error", err)
	}
	var kept bool
	db.QueryRow("SELECT to_regclass($1) IS NOT NULL", fresh+"."+VersionTable).Scan(&kept)
	if !kept {
		t.Errorf("a cancelled first install dropped the version table another install made")
	}
	defer func(w time.Duration) { LockWait = w }(LockWait)
	LockWait = 200 * time.Millisecond
	_, err = Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) {
		t.Errorf("Apply past LockWait = %v; want ErrLocked naming pid %d", err, pid)
	}
}

// TestApplyLeavesSessionsAsTheyWere checks that the sessions Apply and
// goose pin to pg_catalog go back to the caller's pool with the
// search_path they had.
func TestApplyLeavesSessionsAsTheyWere(t *testing.T) {
	db, schema := database(t)
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	if _, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); err != nil {
		t.Fatal(err)
	}
	// Both pooled sessions (Apply's own and goose's) in turn.
	conns := make([]*sql.Conn, 2)
	for i := range conns {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		var path string
		if err := c.QueryRowContext(context.Background(), "SHOW search_path").Scan(&path); err != nil {
			t.Fatal(err)
		}
		if path != `"$user", public` {
			t.Errorf("pooled session %d after Apply has search_path %q; want the default", i, path)
		}
	}
	for _, c := range conns {
		c.Close()
	}
}

// TestInsertersNeedNoUsageOnTheSchema installs into a schema of sfgen's
// own, which grants PUBLIC nothing: a role given ID-making
// (snowflake_grant(), which grants no USAGE on the schema) that may only
// INSERT into a table whose default is snowflake_next_id() gets IDs, fast
// path and slow, while it cannot even name the sequences (and so cannot
// queue a lock on them).
func TestInsertersNeedNoUsageOnTheSchema(t *testing.T) {
	db, schema := database(t)
	if _, err := Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); err != nil {
		t.Fatal(err)
	}
	role := pgtest.Role(t, dsnOf(t, db), "app", "")
	if _, err := db.Exec("CREATE TABLE public." + schema + "_t (id bigint PRIMARY KEY DEFAULT " + schema + ".snowflake_next_id(), n int); GRANT INSERT, SELECT ON public." + schema + "_t TO " + role + "; SELECT " + schema + ".snowflake_grant('" + role + "')"); err != nil {
		t.Fatal(err)
	}
	var usage bool
	db.QueryRow("SELECT has_schema_privilege($1, $2, 'USAGE')", role, schema).Scan(&usage)
	if usage {
		t.Fatalf("%s has USAGE on %s; the test needs a schema PUBLIC has none on", role, schema)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, "SET ROLE "+role); err != nil {
		t.Fatal(err)
	}
	// Pauses past the catch-up period send some inserts down the slow path.
	for i := range 20 {
		if i%5 == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO public."+schema+"_t (n) VALUES ($1)", i); err != nil {
			t.Fatalf("insert %d as %s: %v", i, role, err)
		}
	}
	_, err = conn.ExecContext(ctx, "PREPARE x AS SELECT * FROM "+schema+".snowflake_state")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("naming %s.snowflake_state without USAGE = %v; want permission denied (42501)", schema, err)
	}
	conn.ExecContext(ctx, "RESET ROLE")
}

// TestApplyRefusesAnEpochToCome: a layout whose epoch the database's
// clock has not reached is refused before anything is made, since release
// 2's snowflake_next_id() would hand out negative IDs until the epoch.
func TestApplyRefusesAnEpochToCome(t *testing.T) {
	db, schema := database(t)
	tomorrow := time.Now().Add(24 * time.Hour).UnixMilli()
	l, err := snowflake.NewLayout(tomorrow, 41, 5, 5, 12)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(context.Background(), db, sqlgen.Options{Schema: schema, Layout: l})
	if !errors.Is(err, ErrBeforeEpoch) || !strings.Contains(err.Error(), l.String()) {
		t.Fatalf("Apply with an epoch tomorrow = %v; want ErrBeforeEpoch naming the layout", err)
	}
	var exists bool
	if err := db.QueryRow("SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil || exists {
		t.Errorf("a refused Apply created schema %s (%v)", schema, err)
	}
	// An hour ago is fine.
	l, err = snowflake.NewLayout(time.Now().Add(-time.Hour).UnixMilli(), 41, 5, 5, 12)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(context.Background(), db, sqlgen.Options{Schema: schema, Layout: l}); err != nil {
		t.Fatalf("Apply with an epoch an hour ago: %v", err)
	}
	var id int64
	if err := db.QueryRow("SELECT " + schema + ".snowflake_next_id()").Scan(&id); err != nil || id < 0 {
		t.Errorf("snowflake_next_id() = %d, %v; want a positive ID", id, err)
	}
}

// TestApplyUnsetNode: a first install with UnsetNode takes the node from
// the installing session's settings sfgen.datacenter and sfgen.machine,
// or leaves it unset (snowflake_next_id() refuses with SF201); bad
// settings fail the install, leaving the database as it was; without
// UnsetNode the options' node is set whatever the settings; and no
// install over an existing one changes its node.
func TestApplyUnsetNode(t *testing.T) {
	for _, tc := range []struct {
		name       string
		settings   [2]string // sfgen.datacenter, sfgen.machine; "" unset
		existing   bool      // Apply over an install whose node is 3/7
		o          sqlgen.Options
		node       string // the node after Apply; "" unset
		err        string // Apply fails, saying this
		errSQLCode string
	}{
		{"no settings", [2]string{}, false, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}, "", "", ""},
		{"settings", [2]string{"1", "2"}, false, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}, "1/2", "", ""},
		{"settings and a node", [2]string{"1", "2"}, false, sqlgen.Options{Layout: snowflake.Twitter(), Datacenter: 4, Machine: 5}, "4/5", "", ""},
		{"the zero options", [2]string{}, false, sqlgen.Options{Layout: snowflake.Twitter()}, "0/0", "", ""},
		{"settings over an install", [2]string{"1", "2"}, true, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}, "3/7", "", ""},
		{"no settings over an install", [2]string{}, true, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}, "3/7", "", ""},
		{"one setting", [2]string{"1", ""}, false, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}, "", "sfgen.machine (unset)", "22023"},
		{"not a number", [2]string{"x", "2"}, false, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}, "", "sfgen.datacenter ('x')", "22023"},
		{"out of range", [2]string{"99", "0"}, false, sqlgen.Options{Layout: snowflake.Twitter(), UnsetNode: true}, "", "datacenter 99 out of range", "22003"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, schema := database(t)
			ctx := context.Background()
			if tc.existing {
				if _, err := Apply(ctx, db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema}); err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec("SELECT " + schema + ".snowflake_set_node(3, 7)"); err != nil {
					t.Fatal(err)
				}
			}
			for i, name := range []string{"sfgen.datacenter", "sfgen.machine"} {
				if tc.settings[i] == "" {
					continue
				}
				if _, err := db.Exec(fmt.Sprintf("DO $$BEGIN EXECUTE format('ALTER DATABASE %%I SET %s = %%L', current_database(), %s); END$$", name, pgQuote(tc.settings[i]))); err != nil {
					t.Fatal(err)
				}
			}
			// New sessions, which read the database's settings.
			withSettings, err := sql.Open("pgx", dsnOf(t, db))
			if err != nil {
				t.Fatal(err)
			}
			defer withSettings.Close()
			before := objects(t, db, schema)
			o := tc.o
			o.Schema = schema
			res, err := Apply(ctx, withSettings, o)
			if tc.err != "" {
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != tc.errSQLCode || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Apply = %v; want SQLSTATE %s saying %q", err, tc.errSQLCode, tc.err)
				}
				var exists bool
				db.QueryRow("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists)
				if after := objects(t, db, schema); exists || fmt.Sprint(after) != fmt.Sprint(before) {
					t.Errorf("after a failed first install, schema %s exists = %v and holds %v; want the database as it was", schema, exists, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if res.Version != sqlgen.Latest {
				t.Errorf("Apply = %+v; want version %d", res, sqlgen.Latest)
			}
			var id int64
			err = withSettings.QueryRow("SELECT " + schema + ".snowflake_next_id()").Scan(&id)
			if tc.node == "" {
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "SF201" || !strings.Contains(pe.Message, "no node is set for schema "+schema) {
					t.Errorf("snowflake_next_id() with no node = %d, %v; want SQLSTATE SF201 naming the schema", id, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("snowflake_next_id(): %v", err)
			}
			p, err := snowflake.Decompose(snowflake.ID(id))
			if got := fmt.Sprintf("%d/%d", p.Datacenter, p.Machine); err != nil || got != tc.node {
				t.Errorf("snowflake_next_id() = %d, with node %s (%v); want node %s", id, got, err, tc.node)
			}
		})
	}
}

// pgQuote quotes s as an SQL string literal.
func pgQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// TestApplyNeedsThePrivateSchema: from release 4 the leases live in a
// schema of their own (catalog.PrivateSchema), which the installing role
// must be able to make. A role that may create in public but not create
// schemas in the database (as app roles often are; any other schema
// already needed CREATE on the database) is refused (ErrPrivilege) before
// anything changes, with both fixes named; once a superuser has made the
// private schema for it, the install goes through and uses that schema.
func TestApplyNeedsThePrivateSchema(t *testing.T) {
	db, _ := database(t)
	dsn := dsnOf(t, db)
	schema := catalog.Public.Name()
	role, roleDSN := pgtest.LoginRole(t, dsn, "app", "")
	if _, err := db.Exec("GRANT CREATE ON SCHEMA public TO " + role); err != nil {
		t.Fatal(err)
	}
	app, err := sql.Open("pgx", roleDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	before := objects(t, db, schema)
	private := catalog.PrivateSchema(schema)
	_, err = Apply(context.Background(), app, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, UnsetNode: true})
	if !errors.Is(err, ErrPrivilege) || !strings.Contains(err.Error(), "GRANT CREATE ON DATABASE") ||
		!strings.Contains(err.Error(), "CREATE SCHEMA "+private+" AUTHORIZATION "+role) {
		t.Fatalf("Apply as a role without CREATE on the database = %v; want ErrPrivilege naming the GRANT and the CREATE SCHEMA", err)
	}
	if after := objects(t, db, schema); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused Apply changed the schema:\n  before %v\n  after  %v", before, after)
	}
	if _, err := db.Exec("CREATE SCHEMA " + private + " AUTHORIZATION " + role); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(context.Background(), app, sqlgen.Options{Layout: snowflake.Twitter(), Schema: schema, UnsetNode: true}); err != nil {
		t.Fatalf("Apply with the private schema made for it: %v", err)
	}
	var table bool
	if err := db.QueryRow("SELECT to_regclass($1) IS NOT NULL", private+".snowflake_lease").Scan(&table); err != nil || !table {
		t.Errorf("no lease table in %s after the install: %v", private, err)
	}
}
