package sfgenpg_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/migrations"
	"github.com/sfgen/sfgen/sfgenpg"
)

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		runLeaseHolder()
	}
	os.Exit(pgtest.Main(m))
}

// scanner is what pgx.Row and *sql.Row have in common.
type scanner interface{ Scan(dest ...any) error }

// dbSide is one way to reach PostgreSQL: pgx directly, in either of its
// protocols, or database/sql with pgx's driver.
type dbSide struct {
	name  string
	query func(sql string, args ...any) scanner
	exec  func(sql string, args ...any) error
}

func dbSides(t *testing.T) []dbSide {
	t.Helper()
	dsn := pgtest.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	var sides []dbSide
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DefaultQueryExecMode = mode
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		sides = append(sides, dbSide{
			name:  "pgx " + mode.String(),
			query: func(q string, args ...any) scanner { return conn.QueryRow(ctx, q, args...) },
			exec:  func(q string, args ...any) error { _, err := conn.Exec(ctx, q, args...); return err },
		})
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1) // one session, for the temporary tables
	sides = append(sides, dbSide{
		name:  "database/sql",
		query: func(q string, args ...any) scanner { return db.QueryRowContext(ctx, q, args...) },
		exec:  func(q string, args ...any) error { _, err := db.ExecContext(ctx, q, args...); return err },
	})
	return sides
}

// TestIDInDatabase stores IDs as bigint and reads them back through pgx
// (extended and simple protocol) and database/sql: ID both ways, NULL
// and negative numbers refused with clear errors, NullID and *ID for
// nullable columns.
func TestIDInDatabase(t *testing.T) {
	id, err := sfgen.Compose(1700000000000, 3, 7, 42)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range dbSides(t) {
		t.Run(s.name, func(t *testing.T) {
			if err := s.exec(`CREATE TEMPORARY TABLE post (id bigint PRIMARY KEY, parent bigint, small integer)`); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.exec(`DROP TABLE post`) })
			// ID as a parameter and as a scan target.
			if err := s.exec(`INSERT INTO post VALUES ($1, $2, $3)`, id, sfgen.NullID{}, 5); err != nil {
				t.Fatalf("insert an ID and a NULL NullID: %v", err)
			}
			var got sfgen.ID
			var parent sfgen.NullID
			var small sfgen.ID
			if err := s.query(`SELECT id, parent, small FROM post`).Scan(&got, &parent, &small); err != nil {
				t.Fatalf("scan: %v", err)
			}
			if got != id || parent != (sfgen.NullID{}) || small != 5 {
				t.Errorf("read back %d, %+v, %d; want %d, NULL, 5", got, parent, small, id)
			}
			var typ string
			if err := s.query(`SELECT pg_typeof(id)::text || ' ' || (id = 1724551110456668202)::text FROM post`).Scan(&typ); err != nil || typ != "bigint true" {
				t.Errorf("stored as %q, %v; want the bigint 1724551110456668202", typ, err)
			}
			// The largest ID, both ways.
			var max sfgen.ID
			if err := s.query(`SELECT $1::bigint`, sfgen.ID(9223372036854775807)).Scan(&max); err != nil || max != 9223372036854775807 {
				t.Errorf("largest ID = %d, %v", max, err)
			}
			// A NullID and a *ID with a value.
			if err := s.exec(`UPDATE post SET parent = $1`, sfgen.NullID{ID: 4194439168, Valid: true}); err != nil {
				t.Fatal(err)
			}
			var ptr *sfgen.ID
			if err := s.query(`SELECT parent, parent FROM post`).Scan(&parent, &ptr); err != nil ||
				parent != (sfgen.NullID{ID: 4194439168, Valid: true}) || ptr == nil || *ptr != 4194439168 {
				t.Errorf("parent = %+v, %v, %v; want 4194439168", parent, ptr, err)
			}
			// A nil *ID is NULL, and NULL scans into a nil *ID.
			if err := s.exec(`UPDATE post SET parent = $1`, (*sfgen.ID)(nil)); err != nil {
				t.Fatalf("a nil *ID: %v", err)
			}
			ptr = &got
			if err := s.query(`SELECT parent FROM post`).Scan(&ptr); err != nil || ptr != nil {
				t.Errorf("NULL into a *ID = %v, %v; want nil", ptr, err)
			}
			// NULL into an ID: an error that says what to use, the ID kept.
			got = 9
			err := s.query(`SELECT parent FROM post`).Scan(&got)
			if !errors.Is(err, sfgen.ErrNullID) || !strings.Contains(err.Error(), "cannot scan NULL into an ID; use a NullID or *ID") || got != 9 {
				t.Errorf("NULL into an ID: %d, %v; want ErrNullID", got, err)
			}
			// A negative bigint is not an ID.
			err = s.query(`SELECT -5::bigint`).Scan(&got)
			var re *sfgen.RangeError
			if !errors.As(err, &re) || re.Field != sfgen.FieldID || re.Value != -5 ||
				!strings.Contains(err.Error(), "id -5 out of range [0, 9223372036854775807]") || got != 9 {
				t.Errorf("-5 into an ID: %d, %v; want a *RangeError for id -5", got, err)
			}
			err = s.query(`SELECT -5::bigint`).Scan(&parent)
			if !errors.Is(err, sfgen.ErrOutOfRange) {
				t.Errorf("-5 into a NullID: %v; want ErrOutOfRange", err)
			}
			err = s.query(`SELECT -5::bigint`).Scan(&ptr)
			if !errors.Is(err, sfgen.ErrOutOfRange) {
				t.Errorf("-5 into a *ID: %v; want ErrOutOfRange", err)
			}
			// A negative ID does not reach the database.
			err = s.exec(`INSERT INTO post VALUES ($1)`, sfgen.ID(-1))
			if !errors.Is(err, sfgen.ErrOutOfRange) {
				t.Errorf("insert ID(-1): %v; want ErrOutOfRange", err)
			}
			// Something that is not an integer.
			err = s.query(`SELECT 1.5::float8`).Scan(&got)
			if err == nil || !strings.Contains(err.Error(), "ID") {
				t.Errorf("a float8 into an ID: %v; want an error", err)
			}
		})
	}
}

// readmeDatabase runs docs/go.md's database example, verbatim, on conn
// and db (a table post (id bigint, parent bigint) there), printing to w:
// the fmt below is the printer, so that TestREADMEDatabase can compare
// what the example prints with what docs/go.md says it prints.
func readmeDatabase(ctx context.Context, conn *pgx.Conn, db *sql.DB, w *strings.Builder) {
	fmt := printer{w}
	id, err := sfgen.Compose(1700000000000, 3, 7, 42)
	_, err = conn.Exec(ctx, `INSERT INTO post (id, parent) VALUES ($1, $2)`, id, sfgen.NullID{})
	fmt.Println(err)

	var got sfgen.ID
	var parent sfgen.NullID // or a *sfgen.ID, nil for NULL
	err = conn.QueryRow(ctx, `SELECT id, parent FROM post`).Scan(&got, &parent)
	fmt.Println(got, parent.Valid, err)
	err = db.QueryRowContext(ctx, `SELECT id, parent FROM post`).Scan(&got, &parent)
	fmt.Println(got, parent.Valid, err)

	err = conn.QueryRow(ctx, `SELECT parent FROM post`).Scan(&got)
	fmt.Println(errors.Is(err, sfgen.ErrNullID), err)
	err = db.QueryRowContext(ctx, `SELECT -1::bigint AS id`).Scan(&got)
	fmt.Println(errors.Is(err, sfgen.ErrOutOfRange), err)
	// Prints:
	// <nil>
	// 1724551110456668202 false <nil>
	// 1724551110456668202 false <nil>
	// true can't scan into dest[0] (col: parent): cannot scan NULL into an ID; use a NullID or *ID for a nullable column
	// true sql: Scan error on column index 0, name "id": id -1 out of range [0, 9223372036854775807]
}

type printer struct{ w *strings.Builder }

func (p printer) Println(a ...any) { p.w.WriteString(fmt.Sprintln(a...)) }

// TestREADMEDatabase runs readmeDatabase against PostgreSQL and checks
// that it prints what its "// Prints:" comment, which docs/go.md shows,
// says.
func TestREADMEDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := pgtest.DSN(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := conn.Exec(ctx, `CREATE TABLE post (id bigint PRIMARY KEY, parent bigint)`); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	readmeDatabase(ctx, conn, db, &got)
	checkPrints(t, "readmeDatabase", got.String())
}

// checkPrints checks that fn, a function of db_test.go, printed got:
// what its "// Prints:" comment, which the docs show, says.
func checkPrints(t *testing.T, fn, got string) {
	t.Helper()
	src, err := os.ReadFile("db_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(src), "func "+fn+"(")
	_, prints, ok := strings.Cut(after, "\t// Prints:\n")
	prints, _, _ = strings.Cut(prints, "\n}\n")
	if !ok || prints == "" {
		t.Fatalf("%s has no // Prints: comment", fn)
	}
	var want strings.Builder
	for _, l := range strings.Split(prints, "\n") {
		want.WriteString(strings.TrimPrefix(strings.TrimPrefix(l, "\t//"), " ") + "\n")
	}
	if got != want.String() {
		t.Errorf("%s printed\n%s\nits comment (and the docs) say\n%s", fn, got, want.String())
	}
}

// readmeLease runs docs/leases.md's lease example, verbatim, on db (a
// database with sfgen at release 3 or later in public), printing to w as
// readmeDatabase does; TestREADMELease checks what it prints.
func readmeLease(ctx context.Context, db *sql.DB, w *strings.Builder) {
	fmt := printer{w}
	lease, err := sfgenpg.TakeLease(ctx, db, sfgenpg.LeaseOptions{Holder: "orders-api", TTL: 15 * time.Second})
	if err != nil {
		panic(err) // errors.Is(err, sfgenpg.ErrNoFreeNode) when every node is taken
	}
	defer lease.Close(ctx) // gives the node back at once
	id, err := lease.Next()
	if err != nil {
		panic(err) // errors.Is(err, sfgenpg.ErrLeaseLost) once the lease is lost
	}
	p, _ := lease.Layout().Decompose(id)
	fmt.Println(p.Datacenter == lease.Datacenter(), p.Machine == lease.Machine(), lease.Err())
	// Prints:
	// true true <nil>
}

// TestREADMELease runs readmeLease and checks that it prints what its
// "// Prints:" comment, which docs/leases.md shows, says, and that it gave
// its lease back.
func TestREADMELease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := leaseDB(t, pgtest.DSN(t), "public", sfgen.Twitter(), node{1, 1})
	var got strings.Builder
	readmeLease(ctx, db, &got)
	checkPrints(t, "readmeLease", got.String())
	// Given back, its node is free at once: no lease holds it, live or
	// expired less than a TTL ago, in the database's node registry.
	var live int
	if err := db.QueryRow(`SELECT count(*) FROM public.snowflake_nodes_held() WHERE kind = 'lease' AND holder = 'orders-api'`).Scan(&live); err != nil || live != 0 {
		t.Errorf("%d nodes held by leases of orders-api after the example (%v); want 0", live, err)
	}
}

// docsGoose is docs/go.md's migrations.FS example, verbatim: it applies the
// release line in migrations.FS to db with an application's own goose
// provider.
func docsGoose(ctx context.Context, db *sql.DB) error {
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithTableName("sfgen_db_version"))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx) // release 1, then each upgrade, each in its own transaction
	return err
}

// TestDocsGoose runs docsGoose on a fresh database and checks what
// docs/go.md says of it: the schema ends at the latest release with no node
// (release 1's file sets 0/0, and release 5's upgrade unsets that node,
// which never made an ID), so an INSERT fails with what DBError makes
// ErrNoNode, and Check says ErrNoNode too, until the node is set.
func TestDocsGoose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := openDB(t, pgtest.DSN(t))
	if err := docsGoose(ctx, db); err != nil {
		t.Fatal(err)
	}
	var release int
	if err := db.QueryRowContext(ctx, `SELECT public.snowflake_release()`).Scan(&release); err != nil || release != sqlgen.Latest {
		t.Fatalf("goose with migrations.FS on a fresh database: release %d, %v; want %d", release, err, sqlgen.Latest)
	}
	o := sfgenpg.InstallOptions{Layout: sfgen.Twitter()}
	if err := sfgenpg.Check(ctx, db, o); !errors.Is(err, sfgenpg.ErrNoNode) {
		t.Errorf("Check after goose with migrations.FS: %v; want ErrNoNode", err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT public.snowflake_next_id(), item text)"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(ctx, "INSERT INTO orders (item) VALUES ('tea')")
	if !errors.Is(sfgenpg.DBError(err), sfgenpg.ErrNoNode) {
		t.Errorf("INSERT after goose with migrations.FS: %v; want an error DBError makes ErrNoNode", err)
	}
	if _, err := db.ExecContext(ctx, "SELECT public.snowflake_set_node(1, 3)"); err != nil {
		t.Fatal(err)
	}
	if err := sfgenpg.Check(ctx, db, o); err != nil {
		t.Errorf("Check once the node is set: %v", err)
	}
}

// readmeInstall is docs/go.md's Install and Check at startup, verbatim,
// on db (a fresh database), printing to w as readmeDatabase does;
// TestREADMEInstall checks what it prints.
func readmeInstall(ctx context.Context, db *sql.DB, w *strings.Builder) error {
	fmt := printer{w}
	o := sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Discord(), Node: &sfgenpg.Node{Datacenter: 1, Machine: 2}}
	res, err := sfgenpg.Install(ctx, db, o) // a first install, or the upgrades a newer module brings
	if err != nil {
		return err // errors.Is(err, sfgenpg.ErrUntrustedSchema), sfgenpg.ErrLayoutMismatch, ...
	}
	fmt.Println(res.Schema, res.Release, res.Layout.Name(), *res.Node, len(res.Applied))
	var id sfgen.ID
	err = db.QueryRowContext(ctx, "SELECT ids.snowflake_next_id()").Scan(&id)
	p, _ := sfgen.Discord().Decompose(id)
	fmt.Println(p.Datacenter, p.Machine, err)

	// At startup, when another process installs: refuse to run on a
	// database that is not ready, and say what fixes it.
	err = sfgenpg.Check(ctx, db, o)
	fmt.Println(err)
	err = sfgenpg.Check(ctx, db, sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Twitter()})
	fmt.Println(errors.Is(err, sfgenpg.ErrLayoutMismatch))
	return nil
	// Prints:
	// ids 8 discord {1 2} 1
	// 1 2 <nil>
	// <nil>
	// true
}

// TestREADMEInstall runs readmeInstall on a fresh database and checks
// what it prints.
func TestREADMEInstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := openDB(t, pgtest.DSN(t))
	var got strings.Builder
	if err := readmeInstall(ctx, db, &got); err != nil {
		t.Fatal(err)
	}
	checkPrints(t, "readmeInstall", got.String())
}

// readmeGooseMigration is docs/go.md's sfgen in an application's own
// goose Provider, verbatim: app holds the application's migrations
// (00002_orders.sql makes a table whose id defaults to
// ids.snowflake_next_id()). TestREADMEGooseMigration checks what it
// prints.
func readmeGooseMigration(ctx context.Context, db *sql.DB, app fs.FS, w *strings.Builder) error {
	fmt := printer{w}
	ids := sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Twitter(), Node: &sfgenpg.Node{Datacenter: 1, Machine: 3}}
	p, err := goose.NewProvider(goose.DialectPostgres, db, app,
		goose.WithGoMigrations(sfgenpg.GooseMigration(1, ids))) // version 1: before the app's own files
	if err != nil {
		return err
	}
	results, err := p.Up(ctx) // sfgen, then the app's files
	if err != nil {
		return err
	}
	var id sfgen.ID
	err = db.QueryRowContext(ctx, "INSERT INTO orders (item) VALUES ('tea') RETURNING id").Scan(&id)
	fmt.Println(len(results), id.Datacenter(), id.Machine(), err)
	return nil
	// Prints:
	// 2 1 3 <nil>
}

// TestREADMEGooseMigration runs readmeGooseMigration on a fresh database
// with an application file that uses ids.snowflake_next_id().
func TestREADMEGooseMigration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := openDB(t, pgtest.DSN(t))
	app := fstest.MapFS{"00002_orders.sql": {Data: []byte("-- +goose Up\nCREATE TABLE orders (id bigint PRIMARY KEY DEFAULT ids.snowflake_next_id(), item text);\n")}}
	var got strings.Builder
	if err := readmeGooseMigration(ctx, db, app, &got); err != nil {
		t.Fatal(err)
	}
	checkPrints(t, "readmeGooseMigration", got.String())
}

// readmeFirstScreen is the Go block of the README's first screen,
// verbatim; TestREADMEFirstScreen runs it on a fresh database, where it
// returns nil.
func readmeFirstScreen(ctx context.Context, db *sql.DB) error {
	o := sfgenpg.InstallOptions{Schema: "ids", Layout: sfgen.Twitter(), Node: &sfgenpg.Node{Datacenter: 1, Machine: 1}}
	if _, err := sfgenpg.Install(ctx, db, o); err != nil { // or sfgenpg.GooseMigration(1, o) in the app's goose Provider
		return err
	}
	return sfgenpg.Check(ctx, db, o) // nil; else errors.Is(err, sfgenpg.ErrOlderRelease), sfgenpg.ErrNoNode, ...
}

func TestREADMEFirstScreen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := openDB(t, pgtest.DSN(t))
	if err := readmeFirstScreen(ctx, db); err != nil {
		t.Fatal(err)
	}
}
