// Package migrations holds sfgen's release line for the Twitter layout in
// the public schema, as goose migrations in an embed.FS: one file per
// release of sfgen's SQL.
//
//	00001_sfgen_snowflake.sql   release 1: installs the functions
//	00002_sfgen_release_2.sql   release 2: upgrades release 1
//	...
//	00007_sfgen_release_7.sql   release 7: upgrades release 6
//
// A released file never changes (a test pins each by SHA-256); every
// change to the SQL is a new release whose file upgrades any earlier
// release in place. The Downs of releases 2 to 7 put the release before
// back; later files cannot be undone and say so (docs/releases.md).
// Applied in order, the files take a database at any release to the
// latest, keeping its node, its generator state and the functions its
// column defaults depend on.
//
// The files of releases 1 to 7 are what they shipped as (package
// internal/sqlgen/released still renders them, and a test checks it); a
// later file comes from internal/sqlgen (`go test ./migrations -update`
// writes the latest release's). An application can apply these bytes with
// its own goose provider, in a version table of its own (a fresh database
// ends without a node: set one with sfgen node, or use sfgen.Install or
// sfgen.GooseMigration, which take one, and any schema and layout, and
// apply the latest release in one file):
//
//	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
//		goose.WithTableName("sfgen_db_version"))
package migrations

import "embed"

// FS holds the migration files at its root, named as goose expects.
//
//go:embed *.sql
var FS embed.FS
