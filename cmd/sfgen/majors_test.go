package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"

	snowflake "github.com/sfgen/sfgen"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgcluster/pgtest"
	"github.com/sfgen/sfgen/internal/pgmajor"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/migrations"
)

// serverVersion reads the server's server_version_num and server_version.
func serverVersion(t *testing.T, dsn string) (int, string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var num int
	var version string
	if err := conn.QueryRow(context.Background(), "SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4, pg_catalog.current_setting('server_version')").Scan(&num, &version); err != nil {
		t.Fatal(err)
	}
	return num, version
}

// inventory lists what a database holds outside the system schemas:
// schemas, relations, functions, and public's privileges.
func inventory(t *testing.T, dsn string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, _ := conn.Query(context.Background(), `
		SELECT 'schema ' || nspname || ' ' || coalesce(nspacl::text, '') FROM pg_catalog.pg_namespace
		UNION ALL SELECT 'relation ' || oid::regclass::text FROM pg_catalog.pg_class
			WHERE relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)
		UNION ALL SELECT 'function ' || oid::regprocedure::text FROM pg_catalog.pg_proc
			WHERE pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
`)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// onUnsupportedMajor skips t unless the tests' server is of a major sfgen
// refuses (.ci/run runs these tests on PostgreSQL 14), and returns the
// refusal every route must give, without the command's prefix.
func onUnsupportedMajor(t *testing.T, dsn string) string {
	t.Helper()
	num, version := serverVersion(t, dsn)
	if pgmajor.Major(num) >= pgmajor.Oldest {
		t.Skipf("the server is PostgreSQL %s, which sfgen supports; .ci/run runs this test on PostgreSQL 14", version)
	}
	return fmt.Sprintf("PostgreSQL %d (server %s) is not supported: sfgen needs PostgreSQL 15 or later (15, 16, 17, 18 tested)", pgmajor.Major(num), version)
}

// TestUnsupportedMajorRefused: on PostgreSQL 14 every route sfgen runs
// itself refuses in one line of its own, naming the major and what is
// supported, and leaves the database as it was: sfgen install (upgrade
// of a release-1 schema too), sfgen verify with a database and with a
// throwaway one, and the library's install.Apply. Without the check
// install fails at release 1's UNLOGGED sequence with PostgreSQL's
// error instead.
func TestUnsupportedMajorRefused(t *testing.T) {
	dsn := pgtest.DSN(t)
	refusal := onUnsupportedMajor(t, dsn)
	before := inventory(t, dsn)
	for _, tc := range []struct {
		name     string
		args     []string
		throwway bool
	}{
		{"install", []string{"install", "--dsn", dsn, "--datacenter", "1", "--machine", "1"}, false},
		{"install into a schema", []string{"install", "--dsn", dsn, "--schema", "ids"}, false},
		{"verify", []string{"verify", "--dsn", dsn, "--count", "10"}, false},
		{"verify", []string{"verify", "--count", "10"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := "sfgen " + tc.args[0] + ": " + refusal + "\n"
			if tc.throwway {
				withoutDatabase(t)
				want = "sfgen verify: no --dsn or DATABASE_URL; starting a throwaway PostgreSQL\nsfgen verify: install into the throwaway PostgreSQL: " + refusal + "\n"
			}
			code, out, errOut := sfgen(t, tc.args...)
			if code != exitFail || out != "" || errOut != want {
				t.Errorf("sfgen %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, out, errOut, exitFail, want)
			}
			if after := inventory(t, dsn); after != before {
				t.Errorf("the refused command changed the database:\n%s\nwas\n%s", after, before)
			}
		})
	}

	db := testDB(t, dsn)
	_, err := install.Apply(context.Background(), db, sqlgen.Options{Layout: snowflake.Twitter(), Schema: "lib"})
	var me *pgmajor.Error
	if !errors.Is(err, install.ErrUnsupportedServer) || !errors.As(err, &me) || me.Major >= pgmajor.Oldest || err.Error() != refusal {
		t.Errorf("install.Apply: %v; want %q, wrapping ErrUnsupportedServer", err, refusal)
	}
	if after := inventory(t, dsn); after != before {
		t.Errorf("the refused install.Apply changed the database:\n%s\nwas\n%s", after, before)
	}
}

// TestUnsupportedMajorUsersTools: what users' own tools meet on
// PostgreSQL 14, which sfgen cannot check for them. Where every role may
// create in public (as on 14 by default), release 4's plain script and
// the migration 'sfgen migration' writes refuse it first (SF105, sfgen's
// own words); in a trusted schema they, and release 1's file in
// migrations.FS anywhere, stop at the UNLOGGED sequence with PostgreSQL's
// "unlogged sequences are not supported" (0A000). Either way the
// transaction rolls back whole: the plain script leaves nothing, goose
// only its own empty version table (made before any migration runs).
func TestUnsupportedMajorUsersTools(t *testing.T) {
	ctx := context.Background()
	script := func(t *testing.T, dsn string) error {
		b, err := sqlgen.Script(sqlgen.Options{Layout: snowflake.Twitter(), Schema: "public"})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		// As psql -1 -v ON_ERROR_STOP=1 -f runs it: one transaction, the
		// statements in turn until one fails, then rolled back whole.
		_, err = conn.Exec(ctx, string(b))
		return err
	}
	gooseUp := func(fsys func(t *testing.T) fs.FS, table string) func(t *testing.T, dsn string) error {
		return func(t *testing.T, dsn string) error {
			_, err := newGoose(t, testDB(t, dsn), fsys(t), table).Up(ctx)
			return err
		}
	}
	releaseLine := func(*testing.T) fs.FS { return migrations.FS }
	written := func(t *testing.T) fs.FS {
		dir := t.TempDir()
		if code, _, errOut := sfgen(t, "migration", "--dir", dir, "--sequential", "--datacenter", "1", "--machine", "1"); code != 0 {
			t.Fatalf("sfgen migration: exit %d, %s", code, errOut)
		}
		return os.DirFS(dir)
	}
	const (
		unlogged  = "0A000 unlogged sequences are not supported"
		untrusted = "SF105 sfgen: schema public is not trusted: every role (PUBLIC) can create objects in it, such as overloads of sfgen's functions; sfgen installs only into a schema where no role but its owner (and superusers) can: REVOKE CREATE ON SCHEMA public FROM PUBLIC, or install into a schema of its own"
	)
	for _, tc := range []struct {
		name    string
		trusted bool // REVOKE CREATE ON SCHEMA public FROM PUBLIC first
		run     func(t *testing.T, dsn string) error
		want    string // SQLSTATE and message
		table   string // goose's version table, left behind
	}{
		{"plain script, public as on 14", false, script, untrusted, ""},
		{"plain script, public trusted", true, script, unlogged, ""},
		{"goose with migrations.FS", false, gooseUp(releaseLine, "sfgen_db_version"), unlogged, "sfgen_db_version"},
		{"goose over sfgen migration's file, public as on 14", false, gooseUp(written, "goose_db_version"), untrusted, "goose_db_version"},
		{"goose over sfgen migration's file, public trusted", true, gooseUp(written, "goose_db_version"), unlogged, "goose_db_version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgtest.DSN(t)
			onUnsupportedMajor(t, dsn)
			if tc.trusted {
				conn, err := pgx.Connect(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				_, err = conn.Exec(ctx, "REVOKE CREATE ON SCHEMA public FROM PUBLIC")
				conn.Close(ctx)
				if err != nil {
					t.Fatal(err)
				}
			}
			before := inventory(t, dsn)
			err := tc.run(t, dsn)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code+" "+pe.Message != tc.want {
				t.Errorf("got %v; want ERROR: %s", err, tc.want)
			}
			want := before
			if tc.table != "" {
				want = strings.Join(sortedLines(before+"\nrelation "+tc.table+"\nrelation "+tc.table+"_id_seq\nrelation "+tc.table+"_pkey"), "\n")
			}
			if after := inventory(t, dsn); after != want {
				t.Errorf("the failed install left:\n%s\nwant:\n%s", after, want)
			}
		})
	}
}

// TestVerifyPrintsServerMajor: sfgen verify names the server's major and
// whether sfgen supports it, in the report and in its JSON; the major is
// read here from server_version_num on its own.
func TestVerifyPrintsServerMajor(t *testing.T) {
	dsn := pgtest.DSN(t)
	num, _ := serverVersion(t, dsn)
	if pgmajor.Major(num) < pgmajor.Oldest {
		t.Skipf("PostgreSQL %d: verify refuses it (TestUnsupportedMajorRefused)", num/10000)
	}
	if code, _, errOut := sfgen(t, "install", "--dsn", dsn, "--datacenter", "1", "--machine", "1"); code != 0 {
		t.Fatalf("install: exit %d, %s", code, errOut)
	}
	major := num / 10000
	status := "supported, tested in CI"
	if major > 18 {
		status = "newer than any tested (15, 16, 17, 18): expected to work, not shown to"
	}
	code, out, errOut := sfgen(t, "verify", "--dsn", dsn, "--count", "10")
	if want := fmt.Sprintf("\nserver         PostgreSQL %d: %s\n", major, status); code != 0 || !strings.Contains(out, want) {
		t.Errorf("verify: exit %d, %s%s; want a line %q", code, out, errOut, want)
	}
	code, out, errOut = sfgen(t, "verify", "--dsn", dsn, "--count", "10", "--json")
	if want := fmt.Sprintf(`"server_major":%d,"server_support":%q`, major, status); code != 0 || !strings.Contains(out, want) {
		t.Errorf("verify --json: exit %d, %s%s; want %s", code, out, errOut, want)
	}
}

func sortedLines(s string) []string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return l
}

// newGoose is a goose provider over fsys recording in table, as an
// application's own goose would run it.
func newGoose(t *testing.T, db *sql.DB, fsys fs.FS, table string) *goose.Provider {
	t.Helper()
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithTableName(table), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
