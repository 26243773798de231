// Package install applies sfgen's goose migrations to a PostgreSQL database
// through goose's Provider over pgx, recording them in sfgen's own version
// table so that they never mix with the application's goose_db_version.
package install

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"testing/fstest"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/sfgen/sfgen/internal/sqlgen"
	"github.com/sfgen/sfgen/migrations"
)

// VersionTable is the table, in the target schema, where sfgen's goose
// migrations are recorded.
const VersionTable = "sfgen_db_version"

// lockID is the advisory lock that serialises concurrent installs: the
// first 8 bytes of "sfgen\x00\x00\x01" read as a big-endian integer.
const lockID int64 = 0x736667656e000001

// A Result tells what Apply did.
type Result struct {
	Schema  string   // the schema installed into
	Applied []string // migration files applied by this call, in order
	Version int64    // the schema's sfgen version after the call
}

// FS returns the migration files for o: the committed migrations.FS when o
// renders to the same bytes (the Twitter layout in public with node 0/0),
// otherwise the same file names rendered for o.
func FS(o sqlgen.Options) (fs.FS, error) {
	rendered, err := sqlgen.Migration(o)
	if err != nil {
		return nil, err
	}
	committed, err := migrations.FS.ReadFile(migrations.Name)
	if err == nil && string(committed) == string(rendered) {
		return migrations.FS, nil
	}
	return fstest.MapFS{migrations.Name: {Data: rendered, Mode: 0o444}}, nil
}

// Apply brings the schema in o up to sfgen's latest migration. Running it
// again applies nothing. Each migration runs in its own transaction, so a
// failed migration leaves no part of itself behind; when the first install
// into a database fails, Apply also removes the version table, and the
// schema if it created it, so the database is as it was.
func Apply(ctx context.Context, db *sql.DB, o sqlgen.Options) (*Result, error) {
	schema := o.Schema
	if schema == "" {
		schema = sqlgen.DefaultSchema
	}
	fsys, err := FS(o)
	if err != nil {
		return nil, err
	}
	var schemaExisted, tableExisted bool
	err = db.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1),
		pg_catalog.to_regclass(pg_catalog.quote_ident($1) || '.' || $2) IS NOT NULL`,
		schema, VersionTable).Scan(&schemaExisted, &tableExisted)
	if err != nil {
		return nil, fmt.Errorf("inspect database: %w", err)
	}
	if !schemaExisted {
		if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+sqlgen.QuoteIdentifier(schema)); err != nil {
			return nil, fmt.Errorf("create schema %s: %w", schema, err)
		}
	}
	res, err := up(ctx, db, fsys, schema)
	if err != nil && !tableExisted {
		undo(db, schema, !schemaExisted)
	}
	return res, err
}

func up(ctx context.Context, db *sql.DB, fsys fs.FS, schema string) (*Result, error) {
	p, err := newProvider(db, fsys, schema)
	if err != nil {
		return nil, err
	}
	// No p.Close(): it would close db, which belongs to the caller.
	results, err := p.Up(ctx)
	res := &Result{Schema: schema}
	for _, r := range results {
		if r.Error == nil {
			res.Applied = append(res.Applied, r.Source.Path)
		}
	}
	if err != nil {
		var pe *goose.PartialError
		if errors.As(err, &pe) && pe.Failed != nil {
			return res, fmt.Errorf("apply %s: %w", pe.Failed.Source.Path, pe.Err)
		}
		return res, fmt.Errorf("apply migrations: %w", err)
	}
	if res.Version, err = p.GetDBVersion(ctx); err != nil {
		return res, fmt.Errorf("read version: %w", err)
	}
	return res, nil
}

func newProvider(db *sql.DB, fsys fs.FS, schema string) (*goose.Provider, error) {
	if err := sqlgen.ValidateSchema(schema); err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID))
	if err != nil {
		return nil, err
	}
	// goose writes the table name into its SQL unquoted; ValidateSchema
	// admits only names that need no quotes.
	return goose.NewProvider(goose.DialectPostgres, db, fsys,
		goose.WithTableName(schema+"."+VersionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	)
}

// undo removes what a failed first install left: the version table, and
// the schema when Apply created it and nothing else is in it.
func undo(db *sql.DB, schema string, dropSchema bool) {
	ctx := context.Background() // the caller's context may be what failed
	q := sqlgen.QuoteIdentifier(schema)
	db.ExecContext(ctx, "DROP TABLE IF EXISTS "+q+"."+VersionTable)
	if dropSchema {
		db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+q) // RESTRICT: only if empty
	}
}
