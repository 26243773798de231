package attack

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pressly/goose/v3"

	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/snowflake"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/migrations"
)

// release2Ready says that release 2 is in the tree: sqlgen.Script and
// install.Apply install it, and install.ErrForeignObject exists. Until
// then the release 2 rows skip. To flip it, set it to true and set
// errForeignObject below to install.ErrForeignObject: nothing else here
// names release 2's Go API, so that this package builds before it exists.
const release2Ready = false

// errForeignObject is install.ErrForeignObject, which release 2's
// install.Apply wraps when it refuses to install over objects that sfgen
// did not create. Set it when flipping release2Ready.
var errForeignObject error

// latest is the release that sqlgen.Script and install.Apply install.
const latest = 2

// releases are the releases every attack is replayed on.
var releases = []int{1, latest}

// release1File is the migration that froze release 1, kept in
// migrations.FS after later releases.
const release1File = "00001_sfgen_snowflake.sql"

// forEachRelease runs f in a subtest per release ("release1",
// "release2"), skipping release 2 until it is in the tree.
func forEachRelease(t *testing.T, f func(t *testing.T, release int)) {
	t.Helper()
	for _, r := range releases {
		t.Run(fmt.Sprintf("release%d", r), func(t *testing.T) {
			if r >= 2 && !release2Ready {
				t.Skip("release 2 is not in the tree yet; flip release2Ready (and set errForeignObject) in release_test.go when it is")
			}
			f(t, r)
		})
	}
}

// judge checks an attack's outcome on release: on release 1 it must
// succeed (else the test cannot tell a defended release from an
// undefended one), on later releases it must fail.
func judge(t *testing.T, release int, succeeded bool, details string) {
	t.Helper()
	switch {
	case release == 1 && !succeeded:
		t.Errorf("release 1: the attack did not succeed, so this test cannot detect it: %s", details)
	case release >= 2 && succeeded:
		t.Errorf("release %d: the attack succeeded: %s", release, details)
	case succeeded:
		t.Logf("release %d: the attack succeeded, as expected: %s", release, details)
	default:
		t.Logf("release %d: the attack failed, as it must: %s", release, details)
	}
}

// release1Script is release 1's plain install script for o: the Up
// section of the frozen migration, for o's schema and node. (sqlgen.Script
// renders the latest release, and so stops being release 1 when release
// 2 lands; the frozen file does not.) Only the Twitter layout.
func release1Script(o sqlgen.Options) (string, error) {
	m, err := release1Migration(o)
	if err != nil {
		return "", err
	}
	up, _, ok := strings.Cut(m, "-- +goose Down")
	if !ok {
		return "", fmt.Errorf("%s: no Down section", release1File)
	}
	return up, nil
}

// release1Migration is the frozen migration, Up and Down, for o.
func release1Migration(o sqlgen.Options) (string, error) {
	if o.Layout != (snowflake.Layout{}) && o.Layout != snowflake.Twitter {
		return "", fmt.Errorf("release 1 is frozen for the Twitter layout only")
	}
	schema := o.Schema
	if schema == "" {
		schema = sqlgen.DefaultSchema
	}
	if err := sqlgen.ValidateSchema(schema); err != nil {
		return "", err
	}
	b, err := migrations.FS.ReadFile(release1File)
	if err != nil {
		return "", err
	}
	s := string(b)
	const node = `PERFORM "public".snowflake_set_node(0, 0);`
	const up = "-- +goose Up\n"
	if strings.Count(s, node) != 1 || strings.Count(s, up) != 1 {
		return "", fmt.Errorf("%s is not the release 1 this test knows (no single %q or %q)", release1File, node, up)
	}
	s = strings.Replace(s, node, fmt.Sprintf(`PERFORM "public".snowflake_set_node(%d, %d);`, o.Datacenter, o.Machine), 1)
	if schema != sqlgen.DefaultSchema {
		// As the template does for another schema.
		s = strings.Replace(s, up, up+"\nCREATE SCHEMA IF NOT EXISTS "+sqlgen.QuoteIdentifier(schema)+";\n", 1)
		s = strings.ReplaceAll(s, `"public"`, sqlgen.QuoteIdentifier(schema))
	}
	return s, nil
}

// releaseScript returns release's plain install script for o.
func releaseScript(release int, o sqlgen.Options) (string, error) {
	if release == 1 {
		return release1Script(o)
	}
	b, err := sqlgen.Script(o) // the latest
	return string(b), err
}

// installFn installs a release into o.Schema of db.
type installFn func(ctx context.Context, db *sql.DB, release int, o sqlgen.Options) error

// installScript runs release's plain script on db, as psql -f would.
func installScript(ctx context.Context, db *sql.DB, release int, o sqlgen.Options) error {
	s, err := releaseScript(release, o)
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, s)
	return err
}

// installGoose installs with goose: release 1's frozen migration through
// a goose Provider as release 1's install.Apply did (versions in
// <schema>.sfgen_db_version), and the latest through install.Apply.
func installGoose(ctx context.Context, db *sql.DB, release int, o sqlgen.Options) error {
	if release != 1 {
		_, err := install.Apply(ctx, db, o)
		return err
	}
	m, err := release1Migration(o)
	if err != nil {
		return err
	}
	schema := o.Schema
	if schema == "" {
		schema = sqlgen.DefaultSchema
	}
	// As install.Apply: create the schema only if it is missing (CREATE
	// SCHEMA IF NOT EXISTS needs CREATE on the database even then).
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+sqlgen.QuoteIdentifier(schema)); err != nil {
			return err
		}
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db,
		fstest.MapFS{release1File: {Data: []byte(m), Mode: 0o444}},
		goose.WithTableName(schema+"."+install.VersionTable),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// mustInstall installs release into o.Schema as the superuser: the plain
// script for release 1, install.Apply for the latest.
func (e *env) mustInstall(release int, o sqlgen.Options) {
	e.t.Helper()
	f := installScript
	if release != 1 {
		f = installGoose
	}
	if err := f(context.Background(), e.db, release, o); err != nil {
		e.t.Fatalf("install release %d into %s: %v", release, o.Schema, err)
	}
}
