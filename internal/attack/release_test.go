package attack

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/pressly/goose/v3"

	"github.com/sfgen/sfgen/internal/catalog"
	"github.com/sfgen/sfgen/internal/install"
	"github.com/sfgen/sfgen/internal/pgident"
	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/internal/sqlgen/released"
)

// release2Ready says that release 2 is ready to be judged: until it is
// true, the release 2 rows skip. (sqlgen.ScriptAt and install.Apply
// already install it.)
const release2Ready = true

// releases are the releases every attack is replayed on.
var releases = []int{1, sqlgen.Latest}

// forEachRelease runs f in a subtest per release ("release1",
// "release2"), skipping release 2 until release2Ready.
func forEachRelease(t *testing.T, f func(t *testing.T, release int)) {
	t.Helper()
	for _, r := range releases {
		t.Run(fmt.Sprintf("release%d", r), func(t *testing.T) {
			if r >= 2 && !release2Ready {
				t.Skip("release 2 is not judged yet; flip release2Ready in release_test.go when it is ready")
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

// releaseScript returns release's plain install script for o.
func releaseScript(release int, o sqlgen.Options) (string, error) {
	b, err := released.Script(o, release)
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

// installGoose installs with goose: release 1's migration alone through a
// goose Provider as release 1's install.Apply did (versions in
// <schema>.sfgen_db_version), and the latest through install.Apply.
func installGoose(ctx context.Context, db *sql.DB, release int, o sqlgen.Options) error {
	if release != 1 {
		_, err := install.Apply(ctx, db, o)
		return err
	}
	files, err := released.Migrations(o)
	if err != nil {
		return err
	}
	if files[0].Release != 1 {
		return fmt.Errorf("sqlgen.Migrations starts with release %d, not 1", files[0].Release)
	}
	schema := o.Schema
	if schema == "" {
		schema = catalog.Public.Name()
	}
	// As install.Apply: create the schema only if it is missing (CREATE
	// SCHEMA IF NOT EXISTS needs CREATE on the database even then).
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+pgident.Quote(schema)); err != nil {
			return err
		}
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db,
		fstest.MapFS{files[0].Name: {Data: files[0].SQL, Mode: 0o444}},
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
