package install

// Tests of the step from release 1 of sfgen's SQL to release 2 and back,
// on a real PostgreSQL: every route that puts a schema at release 1 and
// every route up from there, keeping the node, the generator's state, the
// rows and the column defaults; the same catalog whichever route was
// taken; goose's Down back to release 1; a change of release while
// clients insert, and under a statement that runs across it; and what the
// releases do when run again or out of order.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"

	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/migrations"
)

// The node every test sets after its first install. The options keep
// node 0/0, so an install or upgrade that put the options' node back
// would show.
const testDatacenter, testMachine = 3, 7

var testNode = fmt.Sprintf("%d/%d", testDatacenter, testMachine)

// preReleaseFunctions are functions of sfgen's from before release 1,
// which release 2 drops when it finds them (owned by the installing
// role). The tests that upgrade create them at release 1, as an early
// install would have left them.
var preReleaseFunctions = []string{
	"snowflake_catch_up(boolean)",
	"snowflake_next_id_slow(regclass, regclass)",
	"snowflake_next_id_from(regclass, regclass)",
}

// upgradeDB opens a database shared by a test and its subtests, each of
// which uses a schema of its own.
func upgradeDB(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn := pgtest.DSN(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dsn
}

// A fixture is one schema of a test database, with the options that
// render sfgen's SQL for it (node 0/0).
type fixture struct {
	t      *testing.T
	db     *sql.DB
	dsn    string
	o      sqlgen.Options
	schema string
	app    *goose.Provider // the application's provider over FS(o), made on first use
}

func newFixture(t *testing.T, db *sql.DB, dsn string) *fixture {
	t.Helper()
	schema := fmt.Sprintf("sfgen_upgrade_%d_%d", os.Getpid(), schemaSeq.Add(1))
	t.Cleanup(func() { db.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE") })
	return &fixture{t: t, db: db, dsn: dsn, o: sqlgen.Options{Schema: schema}, schema: schema}
}

func (f *fixture) exec(q string, args ...any) {
	f.t.Helper()
	if _, err := f.db.Exec(q, args...); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
}

func (f *fixture) queryInt(q string, args ...any) int64 {
	f.t.Helper()
	var n int64
	if err := f.db.QueryRow(q, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// scriptAt1 renders release 1's frozen plain script.
func scriptAt1(o sqlgen.Options) ([]byte, error) { return sqlgen.ScriptAt(o, 1) }

// script renders a plain script for the fixture's options and returns
// what running it, as psql -f would, gave.
func (f *fixture) script(name string, render func(sqlgen.Options) ([]byte, error)) error {
	f.t.Helper()
	script, err := render(f.o)
	if err != nil {
		f.t.Fatalf("render %s: %v", name, err)
	}
	_, err = f.db.Exec(string(script))
	return err
}

// runScript runs a plain script and fails t if it fails.
func (f *fixture) runScript(name string, render func(sqlgen.Options) ([]byte, error)) {
	f.t.Helper()
	if err := f.script(name, render); err != nil {
		f.t.Fatalf("run %s on schema %s: %v", name, f.schema, err)
	}
}

func (f *fixture) fs() fstest.MapFS {
	f.t.Helper()
	fsys, err := FS(f.o)
	if err != nil {
		f.t.Fatal(err)
	}
	m, ok := fsys.(fstest.MapFS)
	if !ok {
		f.t.Fatalf("FS(%+v) is a %T; want the rendered MapFS for a test schema", f.o, fsys)
	}
	return m
}

// appProvider is an application's own goose provider over sfgen's release
// line, recording it in <schema>.goose_db_version: the route of an
// application that applies migrations.FS itself.
func (f *fixture) appProvider() *goose.Provider {
	f.t.Helper()
	if f.app == nil {
		p, err := goose.NewProvider(goose.DialectPostgres, f.db, f.fs(),
			goose.WithTableName(f.schema+".goose_db_version"), goose.WithDisableGlobalRegistry(true))
		if err != nil {
			f.t.Fatal(err)
		}
		f.app = p
	}
	return f.app
}

// sfgenProvider is goose as `sfgen install` runs it, recording in
// <schema>.sfgen_db_version: the table an older sfgen left, spelled out
// here rather than taken from VersionTable, since that table is what a
// newer sfgen must find.
func (f *fixture) sfgenProvider() *goose.Provider {
	f.t.Helper()
	p, err := goose.NewProvider(goose.DialectPostgres, f.db, f.fs(),
		goose.WithTableName(f.schema+".sfgen_db_version"), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) createSchema() { f.exec("CREATE SCHEMA IF NOT EXISTS " + f.schema) }

// applied takes what a goose run returned and gives the file names it
// applied, failing t on an error: f.applied("Up")(p.Up(ctx)).
func (f *fixture) applied(what string) func([]*goose.MigrationResult, error) []string {
	return func(results []*goose.MigrationResult, err error) []string {
		f.t.Helper()
		if err != nil {
			f.t.Fatalf("goose %s on schema %s: %v", what, f.schema, err)
		}
		var names []string
		for _, r := range results {
			names = append(names, r.Source.Path)
		}
		return names
	}
}

// release is what the schema says its release is: snowflake_release(),
// or 1 when it has snowflake_layout() alone, or 0 with neither.
func (f *fixture) release() int64 {
	f.t.Helper()
	switch f.queryInt(`SELECT CASE WHEN to_regprocedure($1 || '.snowflake_release()') IS NOT NULL THEN 2
		WHEN to_regprocedure($1 || '.snowflake_layout()') IS NOT NULL THEN 1 ELSE 0 END`, f.schema) {
	case 2:
		return f.queryInt("SELECT " + f.schema + ".snowflake_release()")
	case 1:
		return 1
	}
	return 0
}

func (f *fixture) setNode(dc, m int) {
	f.t.Helper()
	f.exec("SELECT "+f.schema+".snowflake_set_node($1, $2)", dc, m)
}

func (f *fixture) node() string {
	f.t.Helper()
	var dc, m int
	if err := f.db.QueryRow("SELECT datacenter_id, machine_id FROM "+f.schema+".snowflake_node()").Scan(&dc, &m); err != nil {
		f.t.Fatalf("snowflake_node(): %v", err)
	}
	return fmt.Sprintf("%d/%d", dc, m)
}

// addLeftovers creates the pre-release functions an early install may
// have left behind.
func (f *fixture) addLeftovers() {
	f.t.Helper()
	for _, fn := range preReleaseFunctions {
		f.exec("CREATE FUNCTION " + f.schema + "." + fn + " RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'")
	}
}

// createTable makes the application's table whose default is
// snowflake_next_id(), and fills it: 100 rows in one statement, then 5
// after pauses longer than a catch-up's interval, so that both the fast
// and the slow path made IDs.
func (f *fixture) createTable() {
	f.t.Helper()
	f.exec("CREATE TABLE " + f.schema + ".t (id bigint PRIMARY KEY DEFAULT " + f.schema + ".snowflake_next_id(), n int)")
	f.exec("INSERT INTO " + f.schema + ".t (n) SELECT g FROM generate_series(1, 100) g")
	for i := range 5 {
		f.exec("SELECT pg_sleep(0.012)")
		f.exec("INSERT INTO "+f.schema+".t (n) VALUES ($1)", 101+i)
	}
}

// A generator is what a change of release must keep: the rows, the
// state, the node and the function the column default depends on.
type generator struct {
	rows      int64
	maxID     int64
	digest    string // md5 of every (id, n), in id order
	state     int64  // snowflake_state's last_value
	node      string
	nextID    int64  // snowflake_next_id()'s oid
	def       string // t.id's default, as PostgreSQL prints it
	dependsOn int64  // the oid of the function that default depends on
}

func (f *fixture) generator() generator {
	f.t.Helper()
	var g generator
	err := f.db.QueryRow(`SELECT count(*), coalesce(max(id), 0),
		md5(coalesce(string_agg(id::text || ':' || n::text, ',' ORDER BY id), '')) FROM `+f.schema+`.t`).Scan(&g.rows, &g.maxID, &g.digest)
	if err != nil {
		f.t.Fatalf("read %s.t: %v", f.schema, err)
	}
	g.state = f.queryInt("SELECT last_value FROM " + f.schema + ".snowflake_state")
	g.node = f.node()
	g.nextID = f.queryInt("SELECT coalesce(to_regprocedure($1)::oid::bigint, 0)", f.schema+".snowflake_next_id()")
	err = f.db.QueryRow(`SELECT coalesce(pg_get_expr(d.adbin, d.adrelid), '(none)'),
			coalesce((SELECT dep.refobjid::bigint FROM pg_depend dep WHERE dep.classid = 'pg_attrdef'::regclass
				AND dep.objid = d.oid AND dep.refclassid = 'pg_proc'::regclass), 0)
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = $1::regclass AND a.attname = 'id'`, f.schema+".t").Scan(&g.def, &g.dependsOn)
	if err != nil {
		f.t.Fatalf("read t.id's default: %v", err)
	}
	return g
}

// insertIDs inserts n rows with the default, one statement each, with a
// pause halfway so that a catch-up falls due, and returns their IDs.
func (f *fixture) insertIDs(n int) []int64 {
	f.t.Helper()
	var ids []int64
	for i := range n {
		if i == n/2 {
			f.exec("SELECT pg_sleep(0.012)")
		}
		var id int64
		if err := f.db.QueryRow("INSERT INTO "+f.schema+".t (n) VALUES ($1) RETURNING id", -1-i).Scan(&id); err != nil {
			f.t.Fatalf("insert with the default on schema %s at release %d: %v", f.schema, f.release(), err)
		}
		ids = append(ids, id)
	}
	return ids
}

// checkKept fails t unless the schema's generator kept everything it had
// before, and makes IDs after every ID before, with its node.
func (f *fixture) checkKept(when string, before generator) {
	f.t.Helper()
	after := f.generator()
	if after.rows != before.rows || after.maxID != before.maxID || after.digest != before.digest {
		f.t.Errorf("%s: t holds %d rows, max id %d, digest %s; before: %d rows, max id %d, digest %s",
			when, after.rows, after.maxID, after.digest, before.rows, before.maxID, before.digest)
	}
	if after.node != before.node {
		f.t.Errorf("%s: node %s; want %s, as before", when, after.node, before.node)
	}
	if after.state < before.state {
		f.t.Errorf("%s: snowflake_state moved back from %d to %d", when, before.state, after.state)
	}
	if after.nextID == 0 || after.nextID != before.nextID {
		f.t.Errorf("%s: snowflake_next_id() has oid %d; want %d, the same function replaced in place, not dropped and made anew", when, after.nextID, before.nextID)
	}
	if !strings.Contains(after.def, "snowflake_next_id()") || after.dependsOn != after.nextID {
		f.t.Errorf("%s: t.id DEFAULT %s depends on function oid %d; want snowflake_next_id() (oid %d)", when, after.def, after.dependsOn, after.nextID)
	}
	last := before.maxID
	for i, id := range f.insertIDs(6) {
		p, err := snowflake.Decompose(snowflake.ID(id))
		if err != nil || id <= last {
			f.t.Errorf("%s: insert %d got id %d, not above %d (every id before it)", when, i, id, last)
			break
		}
		if got := fmt.Sprintf("%d/%d", p.Datacenter, p.Machine); got != before.node {
			f.t.Errorf("%s: new id %d carries node %s; want %s", when, id, got, before.node)
			break
		}
		last = id
	}
	if st := f.queryInt("SELECT last_value FROM " + f.schema + ".snowflake_state"); st <= after.state {
		f.t.Errorf("%s: snowflake_state did not move forward on insert: %d, then %d", when, after.state, st)
	}
}

// checkNoLeftovers fails t if a function sfgen no longer defines is left.
func (f *fixture) checkNoLeftovers(when string) {
	f.t.Helper()
	for _, fn := range preReleaseFunctions {
		if f.queryInt("SELECT count(*) FROM pg_proc WHERE oid = to_regprocedure($1)", f.schema+"."+fn) != 0 {
			f.t.Errorf("%s: %s.%s is still there; release 2 drops it", when, f.schema, fn)
		}
	}
}

// A route installs a release into a new schema.
type route struct {
	name    string
	install func(f *fixture)
}

// release1Routes are the ways a schema got to release 1.
var release1Routes = []route{
	// The frozen plain script, as `sfgen sql` printed it at release 1.
	{"script", func(f *fixture) { f.runScript("ScriptAt(1)", scriptAt1) }},
	// An application that applies migrations.FS with its own goose.
	{"app_goose", func(f *fixture) {
		f.createSchema()
		f.applied("UpTo(1) in goose_db_version")(f.appProvider().UpTo(context.Background(), 1))
	}},
	// What `sfgen install` left at release 1: goose in sfgen_db_version.
	{"sfgen_install", func(f *fixture) {
		f.createSchema()
		f.applied("UpTo(1) in sfgen_db_version")(f.sfgenProvider().UpTo(context.Background(), 1))
	}},
}

// An upgrade takes a schema to release 2; from names the release 1 route
// it came by, which says what goose should apply.
type upgrade struct {
	name string
	run  func(f *fixture, from string)
}

// release2Routes are the ways up to release 2.
var release2Routes = []upgrade{
	{"script", func(f *fixture, from string) { f.runScript("Script", sqlgen.Script) }},
	{"app_goose_up", func(f *fixture, from string) {
		got := f.applied("Up in goose_db_version")(f.appProvider().Up(context.Background()))
		want := []string{sqlgen.MigrationName(1), sqlgen.MigrationName(2)}
		if from == "app_goose" {
			want = want[1:]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			f.t.Errorf("app goose Up applied %v; want %v", got, want)
		}
	}},
	{"apply", func(f *fixture, from string) {
		res, err := Apply(context.Background(), f.db, f.o)
		if err != nil {
			f.t.Fatalf("Apply on schema %s: %v", f.schema, err)
		}
		// Apply records the release an install by another route is at
		// (the version table it finds or makes), so release 1's file never
		// runs over an install: from release 1 it applies the upgrade only.
		want := []string{sqlgen.MigrationName(2)}
		if fmt.Sprint(res.Applied) != fmt.Sprint(want) || res.Version != 2 {
			f.t.Errorf("Apply = %+v; want %v applied and version 2", res, want)
		}
	}},
}

// TestUpgradeKeepsGenerator takes a schema to release 1 by every route,
// with a node of its own, pre-release leftovers and a table whose column
// default is snowflake_next_id(), and upgrades it by every route, the
// matching one and the crossed ones.
func TestUpgradeKeepsGenerator(t *testing.T) {
	t.Parallel()
	db, dsn := upgradeDB(t)
	for _, r1 := range release1Routes {
		for _, r2 := range release2Routes {
			t.Run(r1.name+"_then_"+r2.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, db, dsn)
				r1.install(f)
				if r := f.release(); r != 1 {
					t.Fatalf("after %s, the schema is at release %d; want 1", r1.name, r)
				}
				f.setNode(testDatacenter, testMachine)
				f.addLeftovers()
				f.createTable()
				before := f.generator()
				if before.node != testNode || before.rows != 105 {
					t.Fatalf("at release 1: node %s and %d rows; want %s and 105", before.node, before.rows, testNode)
				}
				r2.run(f, r1.name)
				if r := f.release(); r != 2 {
					t.Fatalf("after %s, snowflake_release() = %d; want 2", r2.name, r)
				}
				when := "release 1 by " + r1.name + ", then " + r2.name
				f.checkKept(when, before)
				f.checkNoLeftovers(when)
			})
		}
	}
	// The committed migrations.FS itself, as an application applies it to
	// the public schema with its own goose: in a database of its own.
	t.Run("migrations_fs_in_public", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		db, dsn := upgradeDB(t)
		f := &fixture{t: t, db: db, dsn: dsn, schema: "public"}
		p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
		if err != nil {
			t.Fatal(err)
		}
		f.applied("UpTo(1) over migrations.FS")(p.UpTo(ctx, 1))
		f.setNode(testDatacenter, testMachine)
		f.addLeftovers()
		f.createTable()
		before := f.generator()
		if got := f.applied("Up over migrations.FS")(p.Up(ctx)); fmt.Sprint(got) != "["+sqlgen.MigrationName(2)+"]" {
			t.Errorf("goose Up over migrations.FS applied %v; want [%s]", got, sqlgen.MigrationName(2))
		}
		if r := f.release(); r != 2 {
			t.Fatalf("after goose Up over migrations.FS, release %d; want 2", r)
		}
		f.checkKept("release 1 then 2 by goose over migrations.FS", before)
		f.checkNoLeftovers("release 1 then 2 by goose over migrations.FS")
	})
}

// A snapshot is the catalog entries of a schema's functions and
// relations (but not the goose version tables nor the test's table t),
// keyed by object, with the schema's name replaced by <schema> so that
// schemas compare.
type snapshot map[string]string

var snapshotExclude = regexp.MustCompile(`^((goose|sfgen)_db_version.*|t|t_pkey)$`)

func (f *fixture) snapshot() snapshot {
	f.t.Helper()
	rows, err := f.db.Query(`SELECT 'function ' || p.oid::regprocedure::text,
			'owner ' || p.proowner::regrole::text || E'\nacl ' || coalesce(p.proacl::text, 'default')
			|| E'\ncomment ' || coalesce(obj_description(p.oid, 'pg_proc'), '-') || E'\n' || pg_get_functiondef(p.oid)
		FROM pg_proc p WHERE p.pronamespace = to_regnamespace($1)
		UNION ALL
		SELECT 'relation ' || c.relname,
			'kind ' || c.relkind::text || ' persistence ' || c.relpersistence::text || E'\nowner ' || c.relowner::regrole::text
			|| E'\nacl ' || coalesce(c.relacl::text, 'default') || E'\ncomment ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
			|| coalesce((SELECT format(E'\nsequence %s start %s increment %s min %s max %s cache %s cycle %s',
				s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle)
				FROM pg_sequence s WHERE s.seqrelid = c.oid), '')
		FROM pg_class c WHERE c.relnamespace = to_regnamespace($1)`, f.schema)
	if err != nil {
		f.t.Fatalf("snapshot of %s: %v", f.schema, err)
	}
	defer rows.Close()
	s := snapshot{}
	norm := func(s string) string { return strings.ReplaceAll(s, f.schema, "<schema>") }
	for rows.Next() {
		var key, def string
		if err := rows.Scan(&key, &def); err != nil {
			f.t.Fatal(err)
		}
		if name, ok := strings.CutPrefix(key, "relation "); ok && snapshotExclude.MatchString(name) {
			continue
		}
		s[norm(key)] = norm(def)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return s
}

// diff describes how b differs from a (each object missing from one, and
// the first line that differs in each object in both), or is "".
func (a snapshot) diff(b snapshot) string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case !inB:
			fmt.Fprintf(&out, "\n  only in the first: %s", k)
		case !inA:
			fmt.Fprintf(&out, "\n  only in the second: %s", k)
		case av != bv:
			al, bl := strings.Split(av, "\n"), strings.Split(bv, "\n")
			for i := 0; i < len(al) || i < len(bl); i++ {
				var x, y string
				if i < len(al) {
					x = al[i]
				}
				if i < len(bl) {
					y = bl[i]
				}
				if x != y {
					fmt.Fprintf(&out, "\n  %s differs at line %d:\n    first:  %s\n    second: %s", k, i+1, x, y)
					break
				}
			}
		}
	}
	return out.String()
}

// differing names the objects in both a and b that differ.
func (a snapshot) differing(b snapshot) []string {
	var names []string
	for k, v := range a {
		if w, ok := b[k]; ok && w != v {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

func (a snapshot) names() []string {
	var names []string
	for k := range a {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// freshRelease2 are the ways to install release 2 into a new schema: the
// plain script, Apply, and an application's goose over a directory that
// holds only sqlgen.Migration (what `sfgen migration` writes there).
var freshRelease2 = []route{
	{"script", func(f *fixture) { f.runScript("Script", sqlgen.Script) }},
	{"apply", func(f *fixture) {
		if _, err := Apply(context.Background(), f.db, f.o); err != nil {
			f.t.Fatalf("Apply: %v", err)
		}
	}},
	{"app_dir_migration", func(f *fixture) {
		f.createSchema()
		m, err := sqlgen.Migration(f.o)
		if err != nil {
			f.t.Fatal(err)
		}
		p, err := goose.NewProvider(goose.DialectPostgres, f.db,
			fstest.MapFS{"20261130193005_sfgen_snowflake.sql": &fstest.MapFile{Data: m}},
			goose.WithTableName(f.schema+".goose_db_version"), goose.WithDisableGlobalRegistry(true))
		if err != nil {
			f.t.Fatal(err)
		}
		f.applied("Up of the single migration")(p.Up(context.Background()))
	}},
}

// TestSameEndStateOnEveryRoute compares the catalog of release 2 reached
// from release 1 by every route with release 2 installed afresh by every
// route, all with the same node.
func TestSameEndStateOnEveryRoute(t *testing.T) {
	t.Parallel()
	db, dsn := upgradeDB(t)
	var mu sync.Mutex
	got := map[string]snapshot{}
	var names []string
	t.Run("install", func(t *testing.T) {
		add := func(name string, install func(f *fixture)) {
			names = append(names, name)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, db, dsn)
				install(f)
				s := f.snapshot()
				mu.Lock()
				got[name] = s
				mu.Unlock()
			})
		}
		for _, r := range freshRelease2 {
			add("fresh_"+r.name, func(f *fixture) {
				r.install(f)
				f.setNode(testDatacenter, testMachine)
			})
		}
		for _, r1 := range release1Routes {
			for _, r2 := range release2Routes {
				add(r1.name+"_then_"+r2.name, func(f *fixture) {
					r1.install(f)
					f.setNode(testDatacenter, testMachine)
					f.addLeftovers()
					f.createTable()
					r2.run(f, r1.name)
				})
			}
		}
	})
	if t.Failed() {
		return
	}
	want := got[names[0]]
	if n := len(want); n < 15 {
		t.Fatalf("release 2 by %s has %d objects; the snapshot missed some: %v", names[0], n, want.names())
	}
	for _, name := range names[1:] {
		if d := want.diff(got[name]); d != "" {
			t.Errorf("release 2 by %s differs from release 2 by %s:%s", names[0], name, d)
		}
	}
}

// TestDownRestoresRelease1 runs the release line's Down from release 2
// to release 1, Up again, and Down to nothing with goose, and compares
// each step with a fresh install of that release.
func TestDownRestoresRelease1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, dsn := upgradeDB(t)
	fresh1 := newFixture(t, db, dsn)
	fresh1.runScript("ScriptAt(1)", scriptAt1)
	fresh1.setNode(testDatacenter, testMachine)
	fresh2 := newFixture(t, db, dsn)
	fresh2.runScript("Script", sqlgen.Script)
	fresh2.setNode(testDatacenter, testMachine)
	release1, release2 := fresh1.snapshot(), fresh2.snapshot()
	if release1.diff(release2) == "" {
		t.Fatal("the snapshots of release 1 and release 2 are equal: the snapshot sees nothing")
	}

	f := newFixture(t, db, dsn)
	f.createSchema()
	p := f.appProvider()
	f.applied("UpTo(1)")(p.UpTo(ctx, 1))
	f.setNode(testDatacenter, testMachine)
	f.createTable()
	f.applied("Up")(p.Up(ctx))
	if r := f.release(); r != 2 {
		t.Fatalf("after Up, release %d; want 2", r)
	}
	f.insertIDs(10)
	before := f.generator()

	res, err := p.Down(ctx)
	if err != nil {
		t.Fatalf("goose Down from release 2: %v", err)
	}
	if res.Source.Version != 2 {
		t.Fatalf("goose Down ran version %d; want 2", res.Source.Version)
	}
	if r := f.release(); r != 1 {
		t.Fatalf("after Down, the schema says release %d; want 1 (no snowflake_release())", r)
	}
	if d := release1.diff(f.snapshot()); d != "" {
		t.Errorf("after Down, the schema differs from a fresh release 1:%s", d)
	}
	f.checkKept("after Down to release 1", before)

	before = f.generator()
	f.applied("Up again")(p.Up(ctx))
	if d := release2.diff(f.snapshot()); d != "" {
		t.Errorf("after Down and Up, the schema differs from a fresh release 2:%s", d)
	}
	f.checkKept("after Down and Up again", before)

	// Release 1's Down drops snowflake_next_id(), which t.id's default
	// depends on: it must fail whole, leaving release 1 as it was.
	before = f.generator()
	_, err = p.DownTo(ctx, 0)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "2BP01" {
		t.Fatalf("goose DownTo(0) with t.id DEFAULT snowflake_next_id() = %v; want SQLSTATE 2BP01 (other objects depend on it)", err)
	}
	if v, err := p.GetDBVersion(ctx); err != nil || v != 1 {
		t.Errorf("after the failed DownTo(0), goose's version is %d (%v); want 1", v, err)
	}
	if r := f.release(); r != 1 {
		t.Errorf("after the failed DownTo(0), release %d; want 1", r)
	}
	if d := release1.diff(f.snapshot()); d != "" {
		t.Errorf("after the failed DownTo(0), the schema differs from a fresh release 1:%s", d)
	}
	f.checkKept("after the failed DownTo(0)", before)

	f.exec("ALTER TABLE " + f.schema + ".t ALTER COLUMN id DROP DEFAULT")
	f.applied("DownTo(0) without the default")(p.DownTo(ctx, 0))
	if left := f.snapshot(); len(left) != 0 {
		t.Errorf("after DownTo(0), the schema still has %v", left.names())
	}
	if v, err := p.GetDBVersion(ctx); err != nil || v != 0 {
		t.Errorf("after DownTo(0), goose's version is %d (%v); want 0", v, err)
	}
}

// A load is 8 clients inserting with the default, one row a statement,
// each on its own connection, while the test changes the release.
type load struct {
	ids      [8][]int64
	errs     [8][]error
	inserted atomic.Int64
	running  atomic.Int64 // clients still inserting
	stop     chan struct{}
	stopped  sync.Once
	wg       sync.WaitGroup
}

func startLoad(t *testing.T, f *fixture) *load {
	t.Helper()
	ctx := context.Background()
	l := &load{stop: make(chan struct{})}
	conns := make([]*pgx.Conn, len(l.ids))
	for w := range conns {
		c, err := pgx.Connect(ctx, f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		conns[w] = c
	}
	// A prepared statement, as most drivers cache one: its plan has the
	// default's body inlined, and must be replanned when it is replaced.
	insert := "INSERT INTO " + f.schema + ".t (n) VALUES ($1) RETURNING id"
	for w, c := range conns {
		l.wg.Add(1)
		l.running.Add(1)
		go func() {
			defer l.wg.Done()
			defer l.running.Add(-1)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				var id int64
				if err := c.QueryRow(ctx, insert, w*1_000_000+i).Scan(&id); err != nil {
					l.errs[w] = append(l.errs[w], fmt.Errorf("client %d, insert %d: %w", w, i, err))
					if len(l.errs[w]) >= 50 {
						return
					}
					continue
				}
				l.ids[w] = append(l.ids[w], id)
				l.inserted.Add(1)
				// Half the clients pause now and then, some longer than
				// the state may trail the clock, so that catch-ups of both
				// kinds (due, and far behind) happen throughout.
				if w%2 == 1 && rng.IntN(30) == 0 {
					time.Sleep(time.Duration(2+rng.IntN(12)) * time.Millisecond)
				}
			}
		}()
	}
	t.Cleanup(l.finish) // before the connections close, should the test stop early
	return l
}

// waitFor returns once the clients have inserted n rows in all, and fails
// t if they all stop first or take more than two minutes.
func (l *load) waitFor(t *testing.T, n int64, when string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); l.inserted.Load() < n; time.Sleep(5 * time.Millisecond) {
		if l.running.Load() == 0 || time.Now().After(deadline) {
			l.finish()
			t.Fatalf("%s: the load stopped at %d inserts, short of %d: %v", when, l.inserted.Load(), n, errors.Join(l.errors()...))
		}
	}
}

// errors returns the first failed insert of each client.
func (l *load) errors() []error {
	var errs []error
	for w := range l.errs {
		if len(l.errs[w]) > 0 {
			errs = append(errs, l.errs[w][0])
		}
	}
	return errs
}

// finish stops the clients and waits for them.
func (l *load) finish() {
	l.stopped.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// check fails t on an ID made twice, one out of order on its connection
// or with another node, or rows in t that the clients did not get, and
// returns the inserts that failed.
func (l *load) check(t *testing.T, f *fixture) []error {
	t.Helper()
	seen := map[int64]int{}
	var total int
	var failed []error
	for w := range l.ids {
		failed = append(failed, l.errs[w]...)
		for i, id := range l.ids[w] {
			total++
			if other, dup := seen[id]; dup {
				t.Errorf("id %d made twice: on client %d and client %d", id, other, w)
			}
			seen[id] = w
			if i > 0 && id <= l.ids[w][i-1] {
				t.Errorf("client %d: id %d after %d, not increasing", w, id, l.ids[w][i-1])
			}
			if p, _ := snowflake.Decompose(snowflake.ID(id)); p.Datacenter != testDatacenter || p.Machine != testMachine {
				t.Errorf("client %d: id %d carries node %d/%d; want %s", w, id, p.Datacenter, p.Machine, testNode)
			}
		}
	}
	var rows, distinct int64
	if err := f.db.QueryRow("SELECT count(*), count(DISTINCT id) FROM "+f.schema+".t").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != int64(total) || distinct != rows {
		t.Errorf("t holds %d rows, %d distinct ids; the clients inserted %d", rows, distinct, total)
	}
	return failed
}

// lockTableGone says whether err is release 2's catch-up failing to lock
// snowflake_state_lock because release 1's Down dropped it meanwhile.
func lockTableGone(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01" && strings.HasSuffix(pe.Message, `.snowflake_state_lock" does not exist`)
}

// TestUpgradeUnderLoad changes the release while 8 clients insert: up
// from release 1 by the script, by goose and by Apply, and down by goose.
// No insert may fail on the way up; on the way down some may (see
// lockTableGone), but no ID may repeat or go backwards either way.
func TestUpgradeUnderLoad(t *testing.T) {
	db, dsn := upgradeDB(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		from    int64
		change  func(f *fixture)
		to      int64
		mayFail bool // failed inserts are reported, not failures of the test
	}{
		{"script_up", 1, func(f *fixture) { f.runScript("Script", sqlgen.Script) }, 2, false},
		{"goose_up", 1, func(f *fixture) { f.applied("Up")(f.appProvider().Up(ctx)) }, 2, false},
		{"apply_up", 1, func(f *fixture) {
			if _, err := Apply(ctx, f.db, f.o); err != nil {
				f.t.Fatalf("Apply under load: %v", err)
			}
		}, 2, false},
		{"goose_down", 2, func(f *fixture) {
			if _, err := f.appProvider().Down(ctx); err != nil {
				f.t.Fatalf("goose Down under load: %v", err)
			}
		}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, db, dsn)
			f.createSchema()
			if tc.name == "apply_up" {
				f.applied("UpTo")(f.sfgenProvider().UpTo(ctx, tc.from))
			} else {
				f.applied("UpTo")(f.appProvider().UpTo(ctx, tc.from))
			}
			f.setNode(testDatacenter, testMachine)
			f.exec("CREATE TABLE " + f.schema + ".t (id bigint PRIMARY KEY DEFAULT " + f.schema + ".snowflake_next_id(), n int)")
			l := startLoad(t, f)
			l.waitFor(t, 100, "before "+tc.name)
			atChange := l.inserted.Load()
			began := time.Now()
			tc.change(f)
			took := time.Since(began)
			atChanged := l.inserted.Load()
			l.waitFor(t, atChanged+100, "after "+tc.name) // the load goes on
			l.finish()
			end := l.inserted.Load()
			if r := f.release(); r != tc.to {
				t.Errorf("after %s the schema is at release %d; want %d", tc.name, r, tc.to)
			}
			failed := l.check(t, f)
			t.Logf("%s took %v; %d inserts before it, %d while it ran, %d after, %d failed",
				tc.name, took.Round(time.Millisecond), atChange, atChanged-atChange, end-atChanged, len(failed))
			for i, err := range failed {
				if i == 10 {
					t.Logf("... and %d more", len(failed)-10)
					break
				}
				if tc.mayFail && (lockTableGone(err) || knownDroppedNextState(err) != "" || knownDroppedGuard(err)) {
					// Known, documented: a Down is not seamless. An insert
					// running release 2's code while the Down commits finds
					// what release 2 alone had dropped: the lock's table,
					// snowflake_next_state(), or its guard, whose lock the
					// DROP holds.
					t.Logf("failed insert (known for Down): %v", err)
				} else {
					t.Errorf("failed insert: %v", err)
				}
			}
		})
	}
}

// release2Only are the objects release 2 has and release 1 has not.
var release2Only = []string{
	"function <schema>.snowflake_next_state()",
	"function <schema>.snowflake_release()",
	"relation snowflake_catch_up_guard",
	"relation snowflake_state_lock",
}

// TestReleasesRunAgainOrOutOfOrder runs release 2's script on release 2,
// release 1's script on release 2, Apply and the script on a schema that
// says it is at release 3, and Apply on release 2 installed by the script.
func TestReleasesRunAgainOrOutOfOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, dsn := upgradeDB(t)
	fresh1 := newFixture(t, db, dsn)
	fresh1.runScript("ScriptAt(1)", scriptAt1)
	fresh1.setNode(testDatacenter, testMachine)
	fresh2 := newFixture(t, db, dsn)
	fresh2.runScript("Script", sqlgen.Script)
	fresh2.setNode(testDatacenter, testMachine)
	release1, release2 := fresh1.snapshot(), fresh2.snapshot()

	// release2Schema installs release 2 with the plain script into a new
	// schema, with the test's node and table.
	release2Schema := func(t *testing.T) *fixture {
		f := newFixture(t, db, dsn)
		f.runScript("Script", sqlgen.Script)
		f.setNode(testDatacenter, testMachine)
		f.createTable()
		return f
	}

	t.Run("script_twice_on_release_2", func(t *testing.T) {
		t.Parallel()
		f := release2Schema(t)
		before, g := f.snapshot(), f.generator()
		f.runScript("Script", sqlgen.Script)
		if d := before.diff(f.snapshot()); d != "" {
			t.Errorf("release 2's script run again changed the schema:%s", d)
		}
		if d := release2.diff(f.snapshot()); d != "" {
			t.Errorf("release 2's script run twice differs from one run:%s", d)
		}
		f.checkKept("after release 2's script ran again", g)
	})

	// A known limitation: release 1's script is frozen and checks
	// nothing, so on release 2 it puts release 1's bodies back over
	// release 2's and leaves what only release 2 has, snowflake_release()
	// (still saying 2) among them. The generator goes on making unique
	// IDs, with release 1's code over release 1's parked guard (so it no
	// longer catches up: verify says why), and release 2's script puts
	// release 2 back.
	t.Run("release_1_script_on_release_2", func(t *testing.T) {
		t.Parallel()
		f := release2Schema(t)
		g := f.generator()
		if err := f.script("ScriptAt(1)", scriptAt1); err != nil {
			t.Fatalf("release 1's script on release 2 failed: %v; it used to run, as it checks nothing", err)
		}
		hybrid := f.snapshot()
		t.Logf("release 1's script on release 2 leaves it saying release %d, with release 1's definitions of %v", f.release(), release2.differing(hybrid))
		if r := f.release(); r != 2 {
			t.Errorf("after release 1's script on release 2, snowflake_release() = %d; want 2, left behind", r)
		}
		want := snapshot{}
		for k, v := range release1 {
			want[k] = v
		}
		for _, k := range release2Only {
			want[k] = release2[k]
		}
		if d := want.diff(hybrid); d != "" {
			t.Errorf("release 1's script on release 2 should leave release 1 plus what only release 2 has; it differs:%s", d)
		}
		f.checkKept("after release 1's script on release 2", g)
		g = f.generator()
		f.runScript("Script", sqlgen.Script)
		if d := release2.diff(f.snapshot()); d != "" {
			t.Errorf("release 2's script after release 1's on release 2 does not give release 2:%s", d)
		}
		f.checkKept("after release 1's script on release 2 and release 2's again", g)
	})

	t.Run("newer_release", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, db, dsn)
		if _, err := Apply(ctx, db, f.o); err != nil {
			t.Fatal(err)
		}
		f.setNode(testDatacenter, testMachine)
		f.createTable()
		f.exec("CREATE OR REPLACE FUNCTION " + f.schema + ".snowflake_release() RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN 3")
		versions := func() string {
			var s sql.NullString
			f.db.QueryRow("SELECT string_agg(version_id::text || ':' || is_applied::text, ',' ORDER BY id) FROM " + f.schema + "." + VersionTable).Scan(&s)
			return s.String
		}
		before, g, v := f.snapshot(), f.generator(), versions()
		_, err := Apply(ctx, db, f.o)
		if !errors.Is(err, ErrNewerRelease) {
			t.Errorf("Apply on a schema at release 3 = %v; want ErrNewerRelease", err)
		}
		if d := before.diff(f.snapshot()); d != "" {
			t.Errorf("the refused Apply changed the schema:%s", d)
		}
		if got := versions(); got != v {
			t.Errorf("the refused Apply changed %s: %s, was %s", VersionTable, got, v)
		}
		err = f.script("Script", sqlgen.Script)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "SF103" {
			t.Errorf("release 2's script on a schema at release 3 = %v; want SQLSTATE SF103", err)
		}
		if d := before.diff(f.snapshot()); d != "" {
			t.Errorf("the refused script changed the schema:%s", d)
		}
		f.checkKept("after the refused Apply and script", g)
	})

	// A schema the plain script took to release 2 has no version table:
	// Apply applies the whole release line to it, release 1's file first.
	t.Run("apply_on_release_2_by_script", func(t *testing.T) {
		t.Parallel()
		f := release2Schema(t)
		g := f.generator()
		res, err := Apply(ctx, db, f.o)
		if err != nil {
			t.Fatalf("Apply on release 2 installed by the script: %v", err)
		}
		if len(res.Applied) > 0 && res.Applied[0] == sqlgen.MigrationName(1) {
			t.Logf("KNOWN ISSUE: Apply on release 2 installed by the script applied %v: release 1's file put release 1's bodies over release 2 and committed, and release 2's then skipped the step from release 1 (snowflake_release() said 2)", res.Applied)
		}
		if d := release2.diff(f.snapshot()); d != "" {
			t.Errorf("Apply on release 2 installed by the script does not give release 2:%s", d)
		}
		f.checkKept("after Apply on release 2 installed by the script", g)
	})
}

// TestStatementAcrossUpgrade runs one statement that began before a
// change of release and ends after it: a bulk INSERT into a partitioned
// table, each row routed to a partition of its own, which the test holds
// up at its 10th row until the change has committed. Its plan was made at
// the old release, and opening each partition after that makes the
// backend take in the catalog changes the new release made, so the calls
// it planned must still work with the functions the new release left
// under their oids.
func TestStatementAcrossUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, dsn := upgradeDB(t)
	const rows, holdAt = 30, 10
	for _, tc := range []struct {
		name   string
		from   int64
		column string // what the statement makes with the old release's functions
		change func(f *fixture)
		known  func(err error) string // a failure already reported, or ""
	}{
		{"up_next_id", 1, "id", func(f *fixture) { f.runScript("Script", sqlgen.Script) }, noKnownFailure},
		{"up_timestamp", 1, "ts", func(f *fixture) { f.runScript("Script", sqlgen.Script) }, noKnownFailure},
		// A Down waits at most sqlgen.LockWait for transactions that read
		// release 2's guard, then refuses, changing nothing: the statement
		// then finishes at release 2.
		{"down_next_id", 2, "id", func(f *fixture) {
			_, err := f.appProvider().Down(ctx)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "55P03" || !strings.Contains(pe.Message, "snowflake_catch_up_guard cannot be dropped; nothing was changed") {
				f.t.Fatalf("goose Down while a statement that read release 2's guard runs = %v; want the refusal", err)
			}
			if r := f.queryInt("SELECT " + f.schema + ".snowflake_release()"); r != 2 {
				f.t.Errorf("after the refused Down, release %d", r)
			}
		}, noKnownFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, db, dsn)
			f.createSchema()
			f.applied("UpTo")(f.appProvider().UpTo(ctx, tc.from))
			f.exec("CREATE TABLE " + f.schema + ".p (id bigint DEFAULT " + f.schema + ".snowflake_next_id(), n int, ts timestamptz) PARTITION BY RANGE (n)")
			for i := range rows {
				f.exec(fmt.Sprintf("CREATE TABLE %s.p_%d PARTITION OF %s.p FOR VALUES FROM (%d) TO (%d)", f.schema, i, f.schema, i, i+1))
			}
			// The hold: an advisory lock of the test's, keyed by the
			// schema's oid, that the statement waits for at row holdAt.
			key := f.queryInt("SELECT to_regnamespace($1)::oid::bigint", f.schema)
			hold, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Close(ctx)
			if _, err := hold.Exec(ctx, "SELECT pg_advisory_lock(1936156417, $1::bigint::integer)", key); err != nil {
				t.Fatal(err)
			}
			columns, values := "n", "g"
			if tc.column == "ts" {
				columns, values = "id, n, ts", "g, g, "+f.schema+".snowflake_timestamp(4194439168 + g)"
			}
			insert := "INSERT INTO " + f.schema + ".p (" + columns + ") SELECT " + values + ` FROM generate_series(0, $1 - 1) g,
				LATERAL (SELECT pg_sleep(0.005 + 0 * g), CASE WHEN g >= $2 THEN pg_advisory_xact_lock_shared(1936156417, $3::bigint::integer) END) z`
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			var pid int64
			if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := c.Exec(ctx, insert, rows, holdAt, key); done <- err }()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				if f.queryInt("SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'", pid) == 1 {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("the statement ended (%v) before it reached the hold", err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the statement did not reach the hold in 10 s")
				}
			}
			tc.change(f)
			if _, err := hold.Exec(ctx, "SELECT pg_advisory_unlock(1936156417, $1::bigint::integer)", key); err != nil {
				t.Fatal(err)
			}
			err = <-done
			if known := tc.known(err); known != "" {
				if tc.from == 1 {
					t.Skipf("KNOWN BUG, reported: %s: %v", known, err)
				}
				t.Logf("known, reported: %s: %v", known, err)
				return
			}
			if err != nil {
				t.Fatalf("a statement running across the change of release failed: %v", err)
			}
			var n, distinct int64
			if err := f.db.QueryRow("SELECT count(*), count(DISTINCT id) FROM "+f.schema+".p").Scan(&n, &distinct); err != nil {
				t.Fatal(err)
			}
			if n != rows || distinct != rows {
				t.Errorf("the statement inserted %d rows with %d distinct ids; want %d", n, distinct, rows)
			}
		})
	}
}

// noKnownFailure: every failure is a failure (release 2 keeps each
// release 1 function's language, so a statement running across the
// upgrade keeps working).
func noKnownFailure(error) string { return "" }

// knownDroppedNextState recognises a statement planned at release 2
// failing once release 1's Down has dropped snowflake_next_state(), which
// the plan calls by oid.
// knownDroppedGuard recognises an insert whose release 2 fast path waited
// for the lock of snowflake_catch_up_guard, which the Down drops.
func knownDroppedGuard(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "XX000" && strings.HasPrefix(pe.Message, "could not open relation with OID")
}

func knownDroppedNextState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "XX000" && strings.HasPrefix(pe.Message, "cache lookup failed for function") {
		return "the Down drops snowflake_next_state(), which a plan made at release 2 calls"
	}
	return ""
}
